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
