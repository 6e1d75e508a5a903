package main

import "testing"

// The no-crd row tells a custom resource's group by the pinned release's
// scheme, not by its name: gateway-api's group lies under k8s.io.
func TestCustomGroupIsByTheScheme(t *testing.T) {
	for group, custom := range map[string]bool{
		"":                          false,
		"apps":                      false,
		"networking.k8s.io":         false,
		"rbac.authorization.k8s.io": false,
		"gateway.networking.k8s.io": true,
		"snapshot.storage.k8s.io":   true,
		"policies.kubewarden.io":    true,
		"cert-manager.io":           true,
	} {
		if customGroup(group) != custom {
			t.Errorf("customGroup(%q) = %v, want %v", group, !custom, custom)
		}
	}
}

// A key given twice: whether the webhook then accepts the object or
// rejects it, the row names the difference.
func TestDuplicateKeyCoversARejection(t *testing.T) {
	test := differenceTests["duplicate-key"]
	check := outcome{class: refused, message: `the key "a" is given twice`}
	for _, server := range []outcome{{class: accepted}, {class: rejected}} {
		if !test(compared{check: check, server: server}, fileFacts{}) {
			t.Errorf("duplicate-key misses a server outcome of class %v", server.class)
		}
	}
	if test(compared{check: check, server: outcome{class: unread}}, fileFacts{}) {
		t.Error("duplicate-key names an object the server never read")
	}
}

// The crd-schema row names a custom resource's schema refusal, and not the
// refusal of one of Kubernetes' own kinds, nor an object check refused.
func TestCRDSchemaIsACustomGroupsRefusal(t *testing.T) {
	test := differenceTests["crd-schema"]
	judgedByCheck := outcome{class: accepted}
	for message, named := range map[string]bool{
		`Widget.example.com "w" is invalid: spec.size: Invalid value: "string": spec.size in body must be of type integer: "string"`: true,
		`HTTPRoute "r" is invalid: spec.parentRefs: Required value`:                                                                  true,
		`Widget in version "v1" cannot be handled as a Widget: strict decoding error: unknown field "spec.bogus"`:                    true,
		`Deployment.apps "d" is invalid: spec.template.spec.containers: Required value`:                                              false,
		`Pod "p" is invalid: spec.containers: Required value`:                                                                        false,
		`Ingress "i" is invalid: spec.rules[0].host: Invalid value: "1.2.3.4": must be a DNS name, not an IP address`:                false,
	} {
		server := outcome{class: refused, message: message}
		if got := test(compared{check: judgedByCheck, server: server}, fileFacts{}); got != named {
			t.Errorf("crd-schema on %q: %v, want %v", message, got, named)
		}
	}
	refusedByCheck := outcome{class: refused, message: "`spec.bogus` is no field of Deployment"}
	server := outcome{class: refused, message: `Widget.example.com "w" is invalid: spec: Required value`}
	if test(compared{check: refusedByCheck, server: server}, fileFacts{}) {
		t.Error("crd-schema names an object check refused")
	}
}
