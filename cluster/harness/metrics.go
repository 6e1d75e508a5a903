package main

// The load scenario's figures, as /metrics gives them: the API server's
// histogram of each webhook's calls, and what each webhook's
// policy-runner serve says of its own time (host/src/serve/metrics.rs).
// Both are read before and after each phase; the difference is the phase.

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
)

// histogram is a Prometheus histogram's cumulative buckets, by upper bound
// (+Inf last).
type histogram map[float64]float64

func (b histogram) bounds() []float64 {
	var bounds []float64
	for le := range b {
		bounds = append(bounds, le)
	}
	sort.Float64s(bounds)
	return bounds
}

func (b histogram) count() float64 { return b[math.Inf(1)] }

// quantile is Prometheus' histogram_quantile: linear within the bucket
// the rank falls in, the highest finite bound where it falls past them.
func (b histogram) quantile(q float64) float64 {
	total := b.count()
	if total == 0 {
		return math.NaN()
	}
	rank := q * total
	lower, below := 0.0, 0.0
	for _, le := range b.bounds() {
		if b[le] >= rank {
			if math.IsInf(le, 1) {
				return lower
			}
			if b[le] == below {
				return le
			}
			return lower + (le-lower)*(rank-below)/(b[le]-below)
		}
		lower, below = le, b[le]
	}
	return lower
}

// within is the share of calls that took at most le (a bucket's bound).
func (b histogram) within(le float64) float64 { return b[le] / b.count() }

// ceiling is the bound of the first bucket that holds every call: the
// most the slowest took, as a histogram can say it.
func (b histogram) ceiling() float64 {
	for _, le := range b.bounds() {
		if b[le] == b.count() {
			return le
		}
	}
	return math.Inf(1)
}

// minus is the calls of b that before had not seen.
func (b histogram) minus(before histogram) histogram {
	delta := histogram{}
	for le, count := range b {
		delta[le] = count - before[le]
	}
	return delta
}

// sample is a line of the Prometheus or OpenMetrics text format.
type sample struct {
	series string
	labels map[string]string
	value  float64
}

// parseSamples reads the samples of the series that keep names, comments
// and other series skipped.
func parseSamples(text string, keep func(series string) bool) ([]sample, error) {
	var samples []sample
	for _, line := range strings.Split(text, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		// The name ends at the labels or the value; a line of another
		// series is not read further.
		series := line[:strings.IndexAny(line+" ", "{ ")]
		if !keep(series) {
			continue
		}
		rest := line[len(series):]
		labelText, valueText := "", rest
		if strings.HasPrefix(rest, "{") {
			var ok bool
			if labelText, valueText, ok = strings.Cut(rest[1:], "} "); !ok {
				return nil, fmt.Errorf("/metrics: %q", line)
			}
		}
		value, err := strconv.ParseFloat(strings.TrimSpace(valueText), 64)
		if err != nil {
			return nil, fmt.Errorf("/metrics: %q: %w", line, err)
		}
		labels := map[string]string{}
		if labelText != "" {
			for _, pair := range strings.Split(labelText, ",") {
				key, quoted, ok := strings.Cut(pair, "=")
				if !ok {
					return nil, fmt.Errorf("/metrics: %q", line)
				}
				labels[key] = strings.Trim(quoted, `"`)
			}
		}
		samples = append(samples, sample{series, labels, value})
	}
	return samples, nil
}

// addBucket adds a bucket sample to h, by its bound.
func (h histogram) addBucket(s sample) error {
	le, err := strconv.ParseFloat(s.labels["le"], 64)
	if err != nil {
		return fmt.Errorf("/metrics: %s: le %q: %w", s.series, s.labels["le"], err)
	}
	h[le] += s.value
	return nil
}

// webhookMetrics is what /metrics says of each webhook, by its name: the
// API server's, summed over the operations and verdicts, and serve's own.
type webhookMetrics struct {
	calls       map[string]histogram
	failedCalls map[string]float64
	serve       map[string]serveMetrics
}

const (
	webhookDuration  = "apiserver_admission_webhook_admission_duration_seconds_bucket"
	webhookRejection = "apiserver_admission_webhook_rejection_count"
)

// parseWebhookMetrics reads the two series the load report needs from the
// API server's /metrics.
func parseWebhookMetrics(text string) (*webhookMetrics, error) {
	samples, err := parseSamples(text, func(series string) bool {
		return series == webhookDuration || series == webhookRejection
	})
	if err != nil {
		return nil, err
	}
	m := &webhookMetrics{calls: map[string]histogram{}, failedCalls: map[string]float64{}, serve: map[string]serveMetrics{}}
	for _, s := range samples {
		name := s.labels["name"]
		if s.series == webhookRejection {
			if s.labels["error_type"] == "calling_webhook_error" {
				m.failedCalls[name] += s.value
			}
			continue
		}
		if m.calls[name] == nil {
			m.calls[name] = histogram{}
		}
		if err := m.calls[name].addBucket(s); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// serveMetrics is what a webhook's serve says of its own time: a
// histogram a stage (handshake, review_queued, review_module, review),
// and the module instances it made.
type serveMetrics struct {
	stages    map[string]histogram
	instances float64
}

const servePrefix = "policy_runner_serve_"

func parseServeMetrics(text string) (serveMetrics, error) {
	samples, err := parseSamples(text, func(series string) bool {
		return strings.HasPrefix(series, servePrefix)
	})
	if err != nil {
		return serveMetrics{}, err
	}
	m := serveMetrics{stages: map[string]histogram{}}
	for _, s := range samples {
		name := strings.TrimPrefix(s.series, servePrefix)
		if name == "instances_total" {
			m.instances = s.value
			continue
		}
		stage, isBucket := strings.CutSuffix(name, "_seconds_bucket")
		if !isBucket {
			continue
		}
		if m.stages[stage] == nil {
			m.stages[stage] = histogram{}
		}
		if err := m.stages[stage].addBucket(s); err != nil {
			return serveMetrics{}, err
		}
	}
	return m, nil
}

// scrapeWebhooks reads the API server's /metrics and each load webhook's.
func (h *harness) scrapeWebhooks() (*webhookMetrics, error) {
	text, err := h.kubectl("get", "--raw", "/metrics")
	if err != nil {
		return nil, err
	}
	m, err := parseWebhookMetrics(text)
	if err != nil {
		return nil, err
	}
	for _, w := range h.loadHooks {
		resp, err := h.webhookClient.Get(w.base + "/metrics")
		if err != nil {
			return nil, err
		}
		text, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("%s/metrics: %s: %s", w.base, resp.Status, text)
		}
		if m.serve[w.name()], err = parseServeMetrics(string(text)); err != nil {
			return nil, fmt.Errorf("%s: %w", w.label, err)
		}
	}
	return m, nil
}

// since is what happened between before and m, as a phase's figures.
func (m *webhookMetrics) since(before *webhookMetrics) loadPhase {
	phase := loadPhase{calls: map[string]histogram{}, failedCalls: map[string]float64{}, serve: map[string]serveMetrics{}}
	for name, buckets := range m.calls {
		phase.calls[name] = buckets.minus(before.calls[name])
	}
	for name, count := range m.failedCalls {
		phase.failedCalls[name] = count - before.failedCalls[name]
	}
	for name, serve := range m.serve {
		delta := serveMetrics{stages: map[string]histogram{}, instances: serve.instances - before.serve[name].instances}
		for stage, buckets := range serve.stages {
			delta.stages[stage] = buckets.minus(before.serve[name].stages[stage])
		}
		phase.serve[name] = delta
	}
	return phase
}
