//! Graphs of nodes and one-way links, and the routes over them: shortest paths (by hop count or
//! by propagation delay) and explicit paths given as node sequences.
//!
//! This module knows nothing of scenarios or of the event loop: the scenario loader uses it to
//! check and compute every flow group's routes once, before a run (so an unroutable scenario is a
//! validation error), and the engine only ever sees the resulting lists of link indices.
//!
//! Ties are broken deterministically: by hop count the shorter total delay wins, by delay the
//! fewer hops; remaining ties go to the path whose nodes were settled first by Dijkstra's
//! algorithm, whose heap is keyed by (cost, node index), so they depend on the declaration
//! order of nodes and links only.

use aqm::Time;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Index of a node.
pub type NodeId = u32;
/// Index of a one-way link.
pub type LinkId = u32;

/// What a route minimises.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// Fewest links (ties: least total propagation delay).
    Hops,
    /// Least total propagation delay (ties: fewest links).
    Delay,
}

impl Metric {
    pub fn name(self) -> &'static str {
        match self {
            Metric::Hops => "hops",
            Metric::Delay => "delay",
        }
    }
}

/// A one-way link as routing sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Edge {
    pub from: NodeId,
    pub to: NodeId,
    pub delay: Time,
}

/// Why an explicit path is not a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathError {
    /// Fewer than two nodes.
    TooShort,
    /// Node at this position appears earlier in the path.
    Loop(usize),
    /// No link goes from node `i` to node `i + 1` of the path.
    NoLink(usize),
}

/// Out-going links of every node.
#[derive(Debug, Clone)]
pub struct Graph {
    edges: Vec<Edge>,
    out: Vec<Vec<LinkId>>,
}

/// Shortest paths from one source: the link by which each node is reached (`None`: the source
/// itself, or unreachable).
pub struct Tree {
    src: NodeId,
    via: Vec<Option<LinkId>>,
}

impl Graph {
    /// A graph of `n_nodes` nodes; link `i` is `edges[i]`.
    pub fn new(n_nodes: usize, edges: &[Edge]) -> Graph {
        let mut out = vec![Vec::new(); n_nodes];
        for (i, e) in edges.iter().enumerate() {
            out[e.from as usize].push(i as LinkId);
        }
        Graph { edges: edges.to_vec(), out }
    }

    pub fn edge(&self, l: LinkId) -> Edge {
        self.edges[l as usize]
    }

    /// Dijkstra from `src` under `metric`.
    pub fn tree(&self, src: NodeId, metric: Metric) -> Tree {
        let n = self.out.len();
        let mut best: Vec<Option<(u128, u128)>> = vec![None; n];
        let mut via = vec![None; n];
        let mut done = vec![false; n];
        let mut heap = BinaryHeap::new();
        best[src as usize] = Some((0, 0));
        heap.push(Reverse(((0u128, 0u128), src)));
        while let Some(Reverse((cost, u))) = heap.pop() {
            if done[u as usize] {
                continue;
            }
            done[u as usize] = true;
            for &l in &self.out[u as usize] {
                let e = self.edges[l as usize];
                let step = match metric {
                    Metric::Hops => (1, e.delay as u128),
                    Metric::Delay => (e.delay as u128, 1),
                };
                let c = (cost.0 + step.0, cost.1 + step.1);
                let v = e.to as usize;
                if !done[v] && best[v].is_none_or(|b| c < b) {
                    best[v] = Some(c);
                    via[v] = Some(l);
                    heap.push(Reverse((c, e.to)));
                }
            }
        }
        Tree { src, via }
    }

    /// The links of an explicit node sequence (the first link from each node to the next, in
    /// declaration order).
    pub fn explicit(&self, nodes: &[NodeId]) -> Result<Vec<LinkId>, PathError> {
        if nodes.len() < 2 {
            return Err(PathError::TooShort);
        }
        for (i, n) in nodes.iter().enumerate() {
            if nodes[..i].contains(n) {
                return Err(PathError::Loop(i));
            }
        }
        nodes
            .windows(2)
            .enumerate()
            .map(|(i, w)| {
                self.out[w[0] as usize]
                    .iter()
                    .copied()
                    .find(|&l| self.edges[l as usize].to == w[1])
                    .ok_or(PathError::NoLink(i))
            })
            .collect()
    }
}

impl Tree {
    /// The links from the source to `dst`, or `None` if `dst` cannot be reached (an empty path
    /// when `dst` is the source).
    pub fn path_to(&self, dst: NodeId, g: &Graph) -> Option<Vec<LinkId>> {
        let mut path = Vec::new();
        let mut at = dst;
        while at != self.src {
            let l = self.via[at as usize]?;
            path.push(l);
            at = g.edges[l as usize].from;
        }
        path.reverse();
        Some(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(from: NodeId, to: NodeId, delay: Time) -> Edge {
        Edge { from, to, delay }
    }

    /// 0 -> 1 -> 2 -> 3 with 1 ms links, and a direct 0 -> 3 link of 10 ms; 3 -> 0 back.
    fn square() -> Graph {
        Graph::new(5, &[e(0, 1, 1), e(1, 2, 1), e(2, 3, 1), e(0, 3, 10), e(3, 0, 1)])
    }

    #[test]
    fn shortest_paths_by_hops_and_by_delay() {
        let g = square();
        assert_eq!(g.tree(0, Metric::Hops).path_to(3, &g), Some(vec![3]));
        assert_eq!(g.tree(0, Metric::Delay).path_to(3, &g), Some(vec![0, 1, 2]));
        assert_eq!(g.tree(0, Metric::Hops).path_to(2, &g), Some(vec![0, 1]));
        assert_eq!(g.tree(3, Metric::Hops).path_to(2, &g), Some(vec![4, 0, 1]));
        assert_eq!(g.tree(0, Metric::Hops).path_to(0, &g), Some(vec![]));
        // node 4 has no links
        assert_eq!(g.tree(0, Metric::Hops).path_to(4, &g), None);
        assert_eq!(g.tree(4, Metric::Hops).path_to(0, &g), None);
    }

    #[test]
    fn ties_go_to_the_shorter_delay_then_the_first_declared() {
        // two 2-hop paths 0 -> 3: via 1 (2 ms) and via 2 (4 ms); by hops the faster wins
        let g = Graph::new(4, &[e(0, 2, 2), e(2, 3, 2), e(0, 1, 1), e(1, 3, 1)]);
        assert_eq!(g.tree(0, Metric::Hops).path_to(3, &g), Some(vec![2, 3]));
        // equal in both: the one through the lower node index
        let g = Graph::new(4, &[e(0, 2, 1), e(2, 3, 1), e(0, 1, 1), e(1, 3, 1)]);
        assert_eq!(g.tree(0, Metric::Hops).path_to(3, &g), Some(vec![2, 3]));
        assert_eq!(g.tree(0, Metric::Delay).path_to(3, &g), Some(vec![2, 3]));
    }

    #[test]
    fn explicit_paths_are_checked() {
        let g = square();
        assert_eq!(g.explicit(&[0, 1, 2, 3]), Ok(vec![0, 1, 2]));
        assert_eq!(g.explicit(&[0, 3]), Ok(vec![3]));
        assert_eq!(g.explicit(&[0, 1, 0]), Err(PathError::Loop(2)));
        assert_eq!(g.explicit(&[0, 2]), Err(PathError::NoLink(0)));
        assert_eq!(g.explicit(&[0]), Err(PathError::TooShort));
    }
}
