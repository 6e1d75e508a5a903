# A `gatekeeper` execution mode policy for the evaluator's tests (Rego v1).
#
# Kubewarden evaluates the entrypoint `policy/violation` with input
# {"parameters": <settings>, "review": <AdmissionRequest>} and data = {}
# or, when context aware, the Gatekeeper inventory
# (`data.inventory.namespace[<ns>][<groupVersion>][<Kind>][<name>]`); each
# violation's `msg` is a reason to reject, joined with ", ".
#
# Settings: {"labels": ["<key>", ...], "requiredConfigMap": "<name>"}.
#
# Violations: `missing label <l>` for each of `labels` absent from the
# object's metadata.labels; `no ConfigMap <name> in <ns>` when
# `requiredConfigMap` is set, the object is namespaced and the inventory
# holds no ConfigMap of that name in its namespace.
package policy

violation contains {"msg": msg} if {
	some label in input.parameters.labels
	not has_label(label)
	msg := sprintf("missing label %s", [label])
}

violation contains {"msg": msg} if {
	name := input.parameters.requiredConfigMap
	name != ""
	ns := namespace
	not has_configmap(ns, name)
	msg := sprintf("no ConfigMap %s in %s", [name, ns])
}

has_label(label) if {
	_ = input.review.object.metadata.labels[label]
}

has_configmap(ns, name) if {
	_ = data.inventory.namespace[ns].v1.ConfigMap[name]
}

# The object's namespace, else the request's.
namespace := ns if {
	ns := input.review.object.metadata.namespace
	ns != ""
} else := ns if {
	ns := input.review.namespace
	ns != ""
}
