package main

import (
	"math"
	"testing"
)

// A histogram read from /metrics as the API server writes it: buckets
// summed over the operations and verdicts of each webhook, and only the
// calls that failed counted as failed; other series are not read.
func TestParseWebhookMetrics(t *testing.T) {
	text := `# HELP apiserver_admission_webhook_admission_duration_seconds ...
apiserver_admission_webhook_admission_duration_seconds_bucket{name="a.load.test",operation="CREATE",rejected="false",type="validating",le="0.005"} 6
apiserver_admission_webhook_admission_duration_seconds_bucket{name="a.load.test",operation="CREATE",rejected="false",type="validating",le="0.025"} 8
apiserver_admission_webhook_admission_duration_seconds_bucket{name="a.load.test",operation="CREATE",rejected="false",type="validating",le="+Inf"} 9
apiserver_admission_webhook_admission_duration_seconds_bucket{name="a.load.test",operation="CREATE",rejected="true",type="validating",le="0.005"} 1
apiserver_admission_webhook_admission_duration_seconds_bucket{name="a.load.test",operation="CREATE",rejected="true",type="validating",le="0.025"} 1
apiserver_admission_webhook_admission_duration_seconds_bucket{name="a.load.test",operation="CREATE",rejected="true",type="validating",le="+Inf"} 1
apiserver_admission_webhook_admission_duration_seconds_count{name="a.load.test",operation="CREATE",rejected="true",type="validating"} 1
apiserver_admission_webhook_rejection_count{error_type="calling_webhook_error",name="a.load.test",operation="CREATE",rejection_code="0",type="validating"} 2
apiserver_admission_webhook_rejection_count{error_type="no_error",name="a.load.test",operation="CREATE",rejection_code="400",type="validating"} 5
other_series{broken 1
other_series_without_labels 1
`
	m, err := parseWebhookMetrics(text)
	if err != nil {
		t.Fatal(err)
	}
	calls := m.calls["a.load.test"]
	want := histogram{0.005: 7, 0.025: 9, math.Inf(1): 10}
	if len(calls) != len(want) {
		t.Fatalf("buckets %v, want %v", calls, want)
	}
	for le, count := range want {
		if calls[le] != count {
			t.Errorf("le %v: %v, want %v", le, calls[le], count)
		}
	}
	if m.failedCalls["a.load.test"] != 2 {
		t.Errorf("failed calls %v, want 2", m.failedCalls["a.load.test"])
	}
	if _, err := parseWebhookMetrics(`apiserver_admission_webhook_rejection_count{name="a"} x`); err == nil {
		t.Error("a value that is no number was read")
	}
}

// serve's own /metrics (host/src/serve/metrics.rs), in the OpenMetrics
// text its encoder writes: a histogram a stage, and the instances made.
func TestParseServeMetrics(t *testing.T) {
	text := `# HELP policy_runner_serve_review_module_seconds In the module.
# TYPE policy_runner_serve_review_module_seconds histogram
# UNIT policy_runner_serve_review_module_seconds seconds
policy_runner_serve_review_module_seconds_sum 0.0031
policy_runner_serve_review_module_seconds_count 3
policy_runner_serve_review_module_seconds_bucket{le="0.00005"} 0
policy_runner_serve_review_module_seconds_bucket{le="0.0005"} 2
policy_runner_serve_review_module_seconds_bucket{le="+Inf"} 3
policy_runner_serve_handshake_seconds_bucket{le="0.001"} 1
policy_runner_serve_handshake_seconds_bucket{le="+Inf"} 1
# HELP policy_runner_serve_instances Module instances made.
# TYPE policy_runner_serve_instances counter
policy_runner_serve_instances_total 2
# EOF
`
	m, err := parseServeMetrics(text)
	if err != nil {
		t.Fatal(err)
	}
	module := m.stages["review_module"]
	if module[0.0005] != 2 || module.count() != 3 || len(module) != 3 {
		t.Errorf("review_module %v", module)
	}
	if m.stages["handshake"].count() != 1 || len(m.stages) != 2 {
		t.Errorf("stages %v", m.stages)
	}
	if m.instances != 2 {
		t.Errorf("instances %v, want 2", m.instances)
	}
	if _, err := parseServeMetrics(`policy_runner_serve_review_seconds_bucket{le="soon"} 1`); err == nil {
		t.Error("a bound that is no number was read")
	}
}

// The quantiles Prometheus' histogram_quantile gives: linear within the
// bucket the rank falls in, the highest finite bound past them; the
// ceiling is the first bound that holds every call.
func TestHistogramQuantiles(t *testing.T) {
	h := histogram{0.005: 50, 0.025: 90, 0.1: 100, math.Inf(1): 100}
	for _, c := range []struct{ q, want float64 }{
		{0.5, 0.005},
		{0.25, 0.0025},
		{0.7, 0.015},
		{0.99, 0.0925},
	} {
		if got := h.quantile(c.q); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("quantile(%v) = %v, want %v", c.q, got, c.want)
		}
	}
	if got := h.ceiling(); got != 0.1 {
		t.Errorf("ceiling %v, want 0.1", got)
	}
	if got := h.within(0.025); got != 0.9 {
		t.Errorf("within 25 ms %v, want 0.9", got)
	}
	past := histogram{0.005: 1, math.Inf(1): 2}
	if got := past.quantile(0.99); got != 0.005 {
		t.Errorf("a rank past the finite bounds: %v, want 0.005", got)
	}
	if got := (histogram{math.Inf(1): 0}).quantile(0.5); !math.IsNaN(got) {
		t.Errorf("no calls: %v, want NaN", got)
	}
}

// The difference of two scrapes is the phase between them.
func TestSince(t *testing.T) {
	before := &webhookMetrics{
		calls:       map[string]histogram{"a": {0.005: 1, math.Inf(1): 2}},
		failedCalls: map[string]float64{"a": 1},
		serve:       map[string]serveMetrics{"a": {stages: map[string]histogram{"review": {0.001: 1, math.Inf(1): 1}}, instances: 1}},
	}
	after := &webhookMetrics{
		calls:       map[string]histogram{"a": {0.005: 4, math.Inf(1): 7}},
		failedCalls: map[string]float64{"a": 1},
		serve: map[string]serveMetrics{"a": {stages: map[string]histogram{
			"review":    {0.001: 3, math.Inf(1): 4},
			"handshake": {0.001: 1, math.Inf(1): 1},
		}, instances: 3}},
	}
	phase := after.since(before)
	if got := phase.calls["a"]; got[0.005] != 3 || got.count() != 5 {
		t.Errorf("calls %v", got)
	}
	if phase.failedCalls["a"] != 0 {
		t.Errorf("failed calls %v", phase.failedCalls["a"])
	}
	serve := phase.serve["a"]
	if got := serve.stages["review"]; got[0.001] != 2 || got.count() != 3 {
		t.Errorf("serve's reviews %v", got)
	}
	if got := serve.stages["handshake"]; got.count() != 1 {
		t.Errorf("serve's handshakes %v (none before)", got)
	}
	if serve.instances != 2 {
		t.Errorf("instances %v, want 2", serve.instances)
	}
}
