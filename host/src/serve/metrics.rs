//! Where a review's time goes inside `serve`, at `/metrics` in the
//! OpenMetrics text format: the TLS handshake of each connection, and each
//! review's wait for a thread, its time in the module and its whole time in
//! the handler. The load scenario (`cluster/run --load`) reads them before
//! and after each phase, beside the API server's own histogram of the same
//! calls: what the API server sees and `serve` does not is the network,
//! HTTP and the scheduling of the two.

use std::fmt;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum_server::accept::Accept;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};

/// The bounds, in seconds: fine below a millisecond, where a review spends
/// its time in the module, and the API server's own bounds above (5, 25,
/// 100 ms, …), so that the two can be read side by side.
const BOUNDS: [f64; 14] = [
    0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
    1.0,
];

pub(crate) struct Metrics {
    registry: Registry,
    /// From a connection's acceptance to the end of its TLS handshake; its
    /// count is the connections made.
    pub handshake: Histogram,
    /// From the handler's start (the body read) to a thread's taking the
    /// review up.
    pub queued: Histogram,
    /// In the module, with the making of an instance where the thread had
    /// none.
    pub module: Histogram,
    /// The handler's whole time: queued, module and the answer's writing.
    pub review: Histogram,
    /// Instances made, one for each thread that takes up a review.
    pub instances: Counter,
}

impl Metrics {
    pub fn new() -> Metrics {
        let histogram = || Histogram::new(BOUNDS);
        let (handshake, queued, module, review) =
            (histogram(), histogram(), histogram(), histogram());
        let instances = Counter::default();
        let mut registry = Registry::with_prefix("policy_runner_serve");
        for (name, help, series) in [
            (
                "handshake",
                "From a connection's acceptance to the end of its TLS handshake",
                &handshake,
            ),
            (
                "review_queued",
                "From the handler's start to a thread's taking the review up",
                &queued,
            ),
            (
                "review_module",
                "In the module, with the making of an instance where the thread had none",
                &module,
            ),
            ("review", "The handler's whole time for a review", &review),
        ] {
            registry.register_with_unit(name, help, Unit::Seconds, series.clone());
        }
        registry.register("instances", "Module instances made", instances.clone());
        Metrics {
            registry,
            handshake,
            queued,
            module,
            review,
            instances,
        }
    }

    /// The OpenMetrics text of every series.
    pub fn text(&self) -> Result<String, fmt::Error> {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry)?;
        Ok(text)
    }
}

pub(crate) fn seconds(took: Duration) -> f64 {
    took.as_secs_f64()
}

/// An acceptor that times the one it wraps (the TLS handshake) into
/// `Metrics::handshake`; a failed handshake is not counted.
#[derive(Clone)]
pub(crate) struct Timed<A> {
    pub inner: A,
    pub metrics: Arc<Metrics>,
}

type Accepted<A, I, S> = io::Result<(<A as Accept<I, S>>::Stream, <A as Accept<I, S>>::Service)>;

impl<A, I, S> Accept<I, S> for Timed<A>
where
    A: Accept<I, S>,
    A::Future: Send + 'static,
{
    type Stream = A::Stream;
    type Service = A::Service;
    type Future = Pin<Box<dyn Future<Output = Accepted<A, I, S>> + Send>>;

    fn accept(&self, stream: I, service: S) -> Self::Future {
        let started = Instant::now();
        let metrics = self.metrics.clone();
        let accepting = self.inner.accept(stream, service);
        Box::pin(async move {
            let accepted = accepting.await;
            if accepted.is_ok() {
                metrics.handshake.observe(seconds(started.elapsed()));
            }
            accepted
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bucket line of `series` with bound `le`, as a scraper reads it.
    fn bucket(text: &str, series: &str, le: &str) -> u64 {
        let prefix = format!("{series}_bucket{{le=\"{le}\"}} ");
        let line = text
            .lines()
            .find(|line| line.starts_with(&prefix))
            .unwrap_or_else(|| panic!("no {prefix} in\n{text}"));
        line[prefix.len()..].parse().expect("a count")
    }

    #[test]
    fn each_observation_is_in_its_series_and_bucket() {
        let metrics = Metrics::new();
        metrics.queued.observe(0.000_03);
        metrics.module.observe(0.000_3);
        metrics.module.observe(0.003);
        metrics.review.observe(0.03);
        metrics.instances.inc();
        let text = metrics.text().expect("encodes");
        let queued = "policy_runner_serve_review_queued_seconds";
        assert_eq!(bucket(&text, queued, "0.00005"), 1, "{text}");
        let module = "policy_runner_serve_review_module_seconds";
        assert_eq!(bucket(&text, module, "0.00025"), 0);
        assert_eq!(bucket(&text, module, "0.0005"), 1);
        assert_eq!(bucket(&text, module, "0.005"), 2);
        let review = "policy_runner_serve_review_seconds";
        assert_eq!(bucket(&text, review, "0.025"), 0);
        assert_eq!(bucket(&text, review, "0.05"), 1);
        assert_eq!(bucket(&text, review, "+Inf"), 1);
        assert_eq!(
            bucket(&text, "policy_runner_serve_handshake_seconds", "+Inf"),
            0
        );
        assert!(
            text.lines()
                .any(|line| line == "policy_runner_serve_instances_total 1"),
            "{text}"
        );
    }
}
