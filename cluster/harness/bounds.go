package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// A policy that never ends its evaluation, registered beside a sane one:
// policy-runner serve cuts it at its deadline and answers as policy-server
// does, well before the webhook's timeoutSeconds, and the sane policy's
// objects are admitted meanwhile (issue 61).
const (
	loopingNamespace = "looping"
	saneNamespace    = "sane"
	// policy-server's answer to a waPC policy cut at its deadline
	// (policy-evaluator 1.35, runtimes/wapc/runtime.rs).
	deadlineMessage = "Policy execution interrupted because it exceeded the allowed execution time"
	// The looping policy's deadline, and every namespaceWebhook's timeout,
	// in seconds.
	policyDeadline = 2
	webhookTimeout = 10
	// ConfigMaps the sane policy admits while the looping one runs.
	saneObjects = 5
)

func (h *harness) bounds() error {
	if ok, err := h.ownWebhooks(); !ok {
		return err
	}
	// The hostile waPC test policy: it loops where its settings say, and
	// accepts otherwise.
	module, err := filepath.Abs(filepath.Join(h.testPolicies, "raw", "hostile-wapc.wasm"))
	if err != nil {
		return err
	}
	cert, key, err := h.ca.serving(h.work, "bounded-webhook", "127.0.0.1")
	if err != nil {
		return err
	}
	loopsBase, err := h.serveWebhook("loops", module, cert, key,
		"--settings-json", `{"validate":"loop"}`, "--policy-timeout", fmt.Sprint(policyDeadline))
	if err != nil {
		return err
	}
	saneRecord := filepath.Join(h.work, "reviews-sane.jsonl")
	saneBase, err := h.serveWebhook("sane", module, cert, key,
		"--settings-json", `{}`, "--record", saneRecord)
	if err != nil {
		return err
	}
	if err := h.registerBounded(loopsBase+"/validate/loops", saneBase+"/validate/sane"); err != nil {
		return err
	}

	// The looping policy's object, twice (the second on the instance
	// rebuilt after the first timed out), with the sane policy's objects
	// created meanwhile.
	for round := 1; round <= 2; round++ {
		var wg sync.WaitGroup
		var admitted []error
		var lock sync.Mutex
		for i := 0; i < saneObjects; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				object := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"admitted-%d-%d","namespace":%q}}`,
					round, i, saneNamespace)
				_, err := h.kubectlIn(object, "create", "-f", "-")
				lock.Lock()
				admitted = append(admitted, err)
				lock.Unlock()
			}(i)
		}
		object := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"never-%d","namespace":%q}}`,
			round, loopingNamespace)
		start := time.Now()
		out, err := h.kubectlIn(object, "create", "-f", "-")
		took := time.Since(start)
		wg.Wait()
		switch {
		case err == nil:
			h.fail("round %d: the looping policy's ConfigMap was created", round)
		case !strings.Contains(out, deadlineMessage):
			h.fail("round %d: the looping policy's ConfigMap was refused without policy-server's answer for a deadline: %s", round, strings.TrimSpace(out))
		case took >= webhookTimeout*time.Second:
			h.fail("round %d: the refusal took %s, the webhook's timeout or more", round, took.Round(time.Millisecond))
		}
		for _, err := range admitted {
			if err != nil {
				h.fail("round %d: the sane policy's ConfigMap: %v", round, err)
			}
		}
		fmt.Printf("   round %d: the looping policy's ConfigMap refused with policy-server's answer in %s (deadline %d s, webhook timeout %d s); %d ConfigMaps admitted meanwhile\n",
			round, took.Round(time.Millisecond), policyDeadline, webhookTimeout, saneObjects)
	}
	// The sane policy judged every one of its objects (and the probe).
	recorded, err := os.ReadFile(saneRecord)
	if err != nil {
		return err
	}
	if reviews := strings.Count(string(recorded), "\n"); reviews < 2*saneObjects {
		h.fail("the sane policy recorded %d reviews, fewer than the %d objects", reviews, 2*saneObjects)
	}
	return nil
}

// registerBounded creates the two namespaces and registers one webhook for
// each policy's ConfigMaps, then waits until the API server calls the
// looping one.
func (h *harness) registerBounded(loopsURL, saneURL string) error {
	for _, namespace := range []string{loopingNamespace, saneNamespace} {
		if _, err := h.kubectl("create", "namespace", namespace); err != nil {
			return err
		}
	}
	// The ConfigMaps of a namespace.
	webhook := func(name, url, namespace string) map[string]any {
		return h.namespaceWebhook(name, url, map[string]any{
			"apiGroups": []string{""}, "apiVersions": []string{"v1"},
			"operations": []string{"CREATE"}, "resources": []string{"configmaps"},
			"scope": "Namespaced",
		}, namespace)
	}
	configuration, _ := json.Marshal(map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1",
		"kind":       "ValidatingWebhookConfiguration",
		"metadata":   map[string]any{"name": "annotations-policy-bounds"},
		"webhooks": []map[string]any{
			webhook("loops.annotations-policy.test", loopsURL, loopingNamespace),
			webhook("sane.annotations-policy.test", saneURL, saneNamespace),
		},
	})
	if _, err := h.kubectlIn(string(configuration), "create", "-f", "-"); err != nil {
		return err
	}
	probe := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"probe","namespace":%q}}`, loopingNamespace)
	return eventually(60*time.Second, func() error {
		out, err := h.kubectlIn(probe, "create", "--dry-run=server", "-f", "-")
		if err == nil || !strings.Contains(out, deadlineMessage) {
			return fmt.Errorf("the looping webhook is not called yet: %s", strings.TrimSpace(out))
		}
		return nil
	})
}
