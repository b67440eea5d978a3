//! Traffic models end to end in the simulator: UDP ON/OFF rates, Poisson short connections (RAQM
//! case 4), web sessions (CHOKeD/WARD), and the per-flow time series.

use sim::{Column, Results};

fn run(text: &str, seed: u64) -> Results {
    sim::run_text(text, &[], Some(seed)).expect("runs")
}

fn strs<'a>(r: &'a Results, col: &str) -> Vec<&'a str> {
    r.flows.strs(col)
}

#[test]
fn onoff_sources_deliver_their_mean_rate() {
    // 20 exponential ON/OFF sources as in RAQM case 4 (80 kb/s while ON, mean ON = OFF = 1 s, 500 B)
    // on an uncongested 10 Mb/s link: each delivers 40 kb/s on average; 20 sources x 1000 s
    let text = r#"
        [simulation]
        duration = "1000s"
        [bottleneck]
        rate = "10Mb/s"
        delay = "5ms"
        limit = 100
        [[flows]]
        name = "onoff"
        transport = "udp"
        app = "onoff"
        count = 20
        rate = "80kb/s"
        packet_size = 500
        on_time = "1s"
        off_time = "1s"
        distribution = "exponential"
    "#;
    let r = run(text, 1);
    let good: f64 = r.flows.f64s("goodput_bps").iter().sum::<f64>() / 20.0;
    println!("mean ON/OFF rate {good:.0} b/s (expected 40000)");
    assert!((good / 40_000.0 - 1.0).abs() < 0.05, "mean rate {good}");
    assert_eq!(r.summary["bottleneck"]["drops_total"], 0);
    assert!(strs(&r, "app").iter().all(|a| *a == "onoff"));
}

#[test]
fn short_connections_arrive_as_a_poisson_process_and_complete() {
    // RAQM case 4's short-lived flows: 10 arrivals/s during [50, 150] s, each sending for a time
    // uniform in [1, 2] s, over five host pairs, beside 10 long-lived flows. (RED and fast access
    // links: with DropTail and access links as fast as the bottleneck, ACK-clocked flows arrive in
    // step with departures and a retransmission arriving between them finds the queue full every
    // time — the deterministic lock-out of Floyd & Jacobson's "phase effects", not what this test
    // is about.)
    let text = r#"
        [simulation]
        duration = "160s"
        [bottleneck]
        rate = "10Mb/s"
        delay = "5ms"
        limit = 100
        aqm = { type = "red", min_th = 20, max_th = 60 }
        [access]
        rate = "100Mb/s"
        [tcp]
        mss = 500
        [[flows]]
        name = "long"
        transport = "tcp"
        count = 10
        [[flows]]
        name = "short"
        transport = "tcp"
        app = "short"
        count = 5
        arrival_rate = 10
        flow_duration = { uniform = ["1s", "2s"] }
        start = "50s"
        stop = "150s"
    "#;
    let r = run(text, 3);
    let apps = strs(&r, "app");
    let starts = r.flows.f64s("start_s");
    let short: Vec<usize> = (0..apps.len()).filter(|&i| apps[i] == "short").collect();
    let n = short.len() as f64;
    // Poisson: count ~ 1000 +- sqrt(1000); per-second counts have variance = mean
    println!("{n} short connections");
    assert!((n - 1000.0).abs() < 4.0 * 1000f64.sqrt(), "{n} arrivals in 100 s at 10/s");
    let mut per_s = vec![0f64; 100];
    for &i in &short {
        assert!((50.0..150.0).contains(&starts[i]));
        per_s[(starts[i] - 50.0) as usize] += 1.0;
    }
    let m = per_s.iter().sum::<f64>() / 100.0;
    let var = per_s.iter().map(|c| (c - m).powi(2)).sum::<f64>() / 99.0;
    println!("per-second counts: mean {m:.2}, dispersion {:.3}", var / m);
    assert!((0.65..1.35).contains(&(var / m)), "index of dispersion {}", var / m);
    // each is its own flow on one of the five host pairs, and finishes soon after its duration
    let hosts = match r.flows.get("host") {
        Some(Column::I64(v)) => v.clone(),
        _ => panic!(),
    };
    let fct = r.flows.f64s("completion_time_s");
    let mut used = std::collections::HashSet::new();
    let mut done = Vec::new();
    for &i in &short {
        assert!((10..15).contains(&hosts[i]), "host {}", hosts[i]);
        used.insert(hosts[i]);
        if fct[i].is_finite() {
            // it sends for at least its duration (a connection whose first segments are lost waits
            // for the 3 s initial RTO, backed off: some take much longer)
            assert!(fct[i] >= 1.0, "completion time {}", fct[i]);
            done.push(fct[i]);
        }
    }
    assert_eq!(used.len(), 5);
    assert!(done.len() as f64 > 0.95 * n, "{} of {n} completed", done.len());
    done.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let median = done[done.len() / 2];
    println!("median completion time {median:.3} s");
    assert!((1.4..2.0).contains(&median), "median completion time {median} (durations uniform on [1, 2] s)");
}

#[test]
fn web_sessions_fetch_pareto_sized_responses_with_think_times() {
    let text = r#"
        [simulation]
        duration = "300s"
        [bottleneck]
        rate = "10Mb/s"
        delay = "10ms"
        limit = 200
        [[flows]]
        name = "web"
        transport = "tcp"
        app = "web"
        count = 20
    "#;
    let r = run(text, 7);
    let fct = r.flows.f64s("completion_time_s");
    let good = r.flows.f64s("goodput_bytes");
    let n = fct.len();
    let completed: Vec<usize> = (0..n).filter(|&i| fct[i].is_finite()).collect();
    // one session: request, response (mean 12 kB: ~12 segments, a few RTTs), think 1 s
    // -> a little over one connection per second per session
    println!("{n} web connections, {} completed", completed.len());
    assert!(n > 20 * 200 && n < 20 * 300, "{n} connections in 300 s from 20 sessions");
    assert!(completed.len() + 20 >= n, "at most one open connection per session");
    let mean_bytes = completed.iter().map(|&i| good[i]).sum::<f64>() / completed.len() as f64;
    // responses are whole segments: mean of ceil(S/1000)*1000 for S Pareto(1.2, 12 kB, cap 2 MB);
    // the capped mean is 9.49 kB (about 10.0 kB rounded up to segments); heavy tail -> loose bound
    println!("mean response {mean_bytes:.0} B");
    assert!((9_000.0..16_000.0).contains(&mean_bytes), "mean response {mean_bytes}");
    // a response takes at least a round trip plus the request's one-way trip
    let rtt = r.flows.f64s("rtt_prop_s")[0];
    assert!(completed.iter().all(|&i| fct[i] >= rtt), "a completion faster than an RTT");
    assert!(strs(&r, "app").iter().all(|a| *a == "web"));
}

#[test]
fn flow_series_records_throughput_and_cwnd() {
    let text = r#"
        [simulation]
        duration = "20s"
        flow_series_interval = "1s"
        [bottleneck]
        rate = "1Mb/s"
        delay = "10ms"
        limit = 50
        [[flows]]
        name = "tcp"
        transport = "tcp"
        count = 2
        [[flows]]
        name = "udp"
        transport = "udp"
        rate = "200kb/s"
    "#;
    let r = run(text, 1);
    let fs = r.flow_series.as_ref().expect("flow series requested");
    let t = fs.f64s("time_s");
    let thr = fs.f64s("throughput_bps");
    let cwnd = fs.f64s("cwnd");
    let flow = match fs.get("flow_id") {
        Some(Column::I64(v)) => v.clone(),
        _ => panic!(),
    };
    assert_eq!(t.len(), 19 * 3, "three flows sampled at 1..19 s");
    // UDP: 200 kb/s on average over the bins (a bin can be off while the shared queue fills or
    // drains); no window
    let mut udp = Vec::new();
    for i in 0..t.len() {
        if flow[i] == 2 {
            assert!(cwnd[i].is_nan());
            udp.push(thr[i]);
        } else {
            assert!(cwnd[i] >= 1.0);
        }
    }
    let m = udp.iter().sum::<f64>() / udp.len() as f64;
    assert!((m / 200_000.0 - 1.0).abs() < 0.05, "UDP mean over bins {m}");
    // the bins add up to the run's throughput
    let total: f64 = thr.iter().sum::<f64>() * 1.0;
    let run_total: f64 = r.flows.f64s("throughput_bps").iter().sum::<f64>() * 20.0;
    assert!((total - run_total).abs() / run_total < 0.06, "{total} vs {run_total}");
    // pacing rate (NaN: these senders do not pace), smoothed RTT, running count of retransmissions
    let (pacing, srtt, retx) = (fs.f64s("pacing_rate_bps"), fs.f64s("srtt_s"), fs.f64s("retx_pkts"));
    let mut last = [0.0f64; 2];
    let mut timed = [false; 2];
    for i in 0..t.len() {
        assert!(pacing[i].is_nan());
        if flow[i] == 2 {
            assert!(srtt[i].is_nan() && retx[i].is_nan());
        } else {
            let f = flow[i] as usize;
            // NaN only before the flow's first RTT sample
            assert!(srtt[i].is_nan() && !timed[f] || srtt[i] >= 0.02 && srtt[i] < 2.0, "srtt {}", srtt[i]);
            timed[f] |= !srtt[i].is_nan();
            assert!(retx[i] >= last[flow[i] as usize], "a running count");
            last[flow[i] as usize] = retx[i];
        }
    }
    let retx_run = r.flows.f64s("retx_pkts").to_vec();
    for f in 0..2 {
        assert!(timed[f]);
        assert!(last[f] >= retx_run[f] && last[f] > 0.0, "{} {}", last[f], retx_run[f]);
    }
}
