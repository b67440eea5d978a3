"""Fluid model of CUBIC (RFC 9438) under random loss: where the tolerances of
crates/sim/tests/tcp_vegas_cubic.rs (cubic_response_function_*) come from.

RFC 9438's average window, (C(3+b)/(4(1-b)))^(1/4) RTT^(3/4) / p^(3/4) (cubic region) or
sqrt(3/(2p)) (Reno-friendly region), assumes one loss every 1/p packets. The simulator's
`loss_rate` drops packets independently. This model runs the same window rules with either loss
process and reports the time-averaged window over the RFC value:

* between losses cwnd = max(W_cubic(t), W_est(t)), t from the start of the epoch,
  W_cubic(t) = C (t - K)^3 + W_max, K = cbrt((W_max - cwnd_epoch) / C),
  W_est growing alpha per round trip (alpha = 3(1-b)/(1+b), 1 once W_est >= cwnd_prior);
* packets leave at cwnd / RTT; the loss is detected one round trip after the lost packet was
  sent (losses in between belong to the same window and are merged); the window then drops to
  b * cwnd for one round trip of recovery, after which the next epoch starts;
* fast convergence: W_max = cwnd (1 + b) / 2 if cwnd < W_max, else cwnd.

Usage: python3 docs/tcp/cubic_fluid.py   (numpy; about a minute)
"""

import numpy as np

C, BETA = 0.4, 0.7


def rfc_window(rtt, p):
    cubic = (C * (3 + BETA) / (4 * (1 - BETA))) ** 0.25 * rtt**0.75 / p**0.75
    reno = (1.5 / p) ** 0.5
    return max(cubic, reno)


def average_window(p, rtt, epochs, seed, periodic=False, fast_convergence=True, friendly=True):
    rng = np.random.default_rng(seed)
    w_max = rfc_window(rtt, p)
    start, prior = BETA * w_max, w_max
    area = time = 0.0
    dt = rtt / 20
    alpha0 = 3 * (1 - BETA) / (1 + BETA)
    for _ in range(epochs):
        # one round trip of recovery at the reduced window
        area += start * rtt
        time += rtt
        gap = (1.0 / p if periodic else rng.geometric(p)) - start
        k = np.cbrt(max(w_max - start, 0.0) / C)
        t = sent = 0.0
        w_est = start
        lost_at = None
        while True:
            w = C * (t - k) ** 3 + w_max
            if friendly:
                w_est += (1.0 if w_est >= prior else alpha0) * dt / rtt
                w = max(w, w_est)
            area += w * dt
            time += dt
            sent += w / rtt * dt
            t += dt
            if lost_at is None and sent >= gap:
                lost_at = t
            if lost_at is not None and t >= lost_at + rtt:
                break
        w_max = w * (1 + BETA) / 2 if fast_convergence and w < w_max else w
        prior = w
        start = max(BETA * w, 2.0)
    return area / time


def stats(p, rtt, epochs, seeds, **kw):
    xs = [average_window(p, rtt, epochs, s, **kw) / rfc_window(rtt, p) for s in seeds]
    return np.mean(xs), np.std(xs)


if __name__ == "__main__":
    for rtt, p in [(0.4, 2e-3), (0.4, 1e-3), (0.4, 3e-4), (0.04, 1e-3), (0.04, 3e-4)]:
        per = average_window(p, rtt, 300, 0, periodic=True, fast_convergence=False) / rfc_window(rtt, p)
        m, s = stats(p, rtt, 400 if rtt > 0.1 else 600, range(30))
        print(f"RTT {rtt} p {p}: periodic {per:.3f}; Bernoulli mean {m:.3f} sd {s:.3f}")
    m, s = stats(1e-3, 0.04, 600, range(30), friendly=False)
    print(f"RTT 0.04 p 0.001 without the Reno-friendly region: mean {m:.3f} sd {s:.3f}")
    ps = [2e-3, 1e-3, 3e-4]
    slopes, means = [], []
    for s in range(30):
        ws = [average_window(p, 0.4, 400, 1000 * i + s) for i, p in enumerate(ps)]
        slopes.append(np.polyfit(np.log(ps), np.log(ws), 1)[0])
        means.append(np.mean([w / rfc_window(0.4, p) for w, p in zip(ws, ps)]))
    print(f"cubic region, 3 runs: mean ratio {np.mean(means):.3f} sd {np.std(means):.3f}; "
          f"exponent {np.mean(slopes):.3f} sd {np.std(slopes):.3f}")
