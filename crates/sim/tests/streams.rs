//! Random streams belong to components: adding a flow or a group must not change the draws of
//! the others (here, the uniformly random start times of an existing group).

fn scenario(extra: &str, count: u32) -> String {
    format!(
        r#"
        [simulation]
        duration = "3s"
        [bottleneck]
        rate = "10Mb/s"
        delay = "5ms"
        limit = 100
        [[flows]]
        name = "a"
        transport = "tcp"
        count = {count}
        start = {{ uniform = ["0s", "2s"] }}
        {extra}
        "#
    )
}

fn starts(text: &str, group: &str) -> Vec<f64> {
    let r = sim::run_text(text, &[], Some(11)).expect("runs");
    let groups = r.flows.strs("group");
    r.flows.f64s("start_s").iter().zip(groups).filter(|(_, g)| *g == group).map(|(s, _)| *s).collect()
}

#[test]
fn adding_flows_or_groups_keeps_other_streams() {
    let base = starts(&scenario("", 5), "a");
    assert_eq!(base.len(), 5);
    // five distinct draws
    let mut d = base.clone();
    d.dedup();
    assert_eq!(d.len(), 5);
    // more flows in the same group: the first five keep their start times
    let more = starts(&scenario("", 8), "a");
    assert_eq!(&more[..5], &base[..]);
    // another group: group "a" is unchanged
    let other =
        "[[flows]]\nname = \"b\"\ntransport = \"udp\"\nrate = \"1Mb/s\"\nstart = { uniform = [\"0s\", \"1s\"] }";
    assert_eq!(starts(&scenario(other, 5), "a"), base);
    // a different seed changes them
    let r = sim::run_text(&scenario("", 5), &[], Some(12)).unwrap();
    assert_ne!(r.flows.f64s("start_s"), &base[..]);
}
