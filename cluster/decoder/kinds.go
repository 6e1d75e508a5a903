package main

import (
	"fmt"
	"io"
	"sort"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
)

// printKinds writes the table `policy-runner check` embeds
// (manifests/src/refusals/kubernetes-kinds.tsv): every kind the API server of the
// pinned release serves in the groups of the client-go scheme, as discovery lists
// them (`served`), and every kind of k8s.io/api whose version that release no longer
// serves (`removed`, with the release that removed it and what replaces it, from the
// types' generated APILifecycleRemoved and APILifecycleReplacement). Sorted, tab
// separated, one kind a line, after the release's:
//
//	release  MAJOR.MINOR
//	served   GROUP/VERSION  KIND
//	removed  GROUP/VERSION  KIND  MAJOR.MINOR  REPLACEMENT-GROUP/VERSION  REPLACEMENT-KIND
//
// (the core group's versions are written as kubectl writes them: "v1").
func printKinds(w io.Writer) error {
	var lines []string
	for gv, kinds := range served {
		for kind := range kinds {
			lines = append(lines, fmt.Sprintf("served\t%s\t%s", gv.String(), kind))
		}
	}
	for gvk := range scheme.Scheme.AllKnownTypes() {
		if gvk.Version == runtime.APIVersionInternal || notTopLevel[gvk.GroupKind()] {
			continue
		}
		obj, err := scheme.Scheme.New(gvk)
		if err != nil || meta.IsListType(obj) {
			continue
		}
		r, ok := obj.(lifecycleRemoved)
		if !ok || !atOrBefore(r.APILifecycleRemoved()) {
			continue
		}
		major, minor := r.APILifecycleRemoved()
		var replacement schema.GroupVersionKind
		if rp, ok := obj.(lifecycleReplacement); ok {
			replacement = rp.APILifecycleReplacement()
		}
		lines = append(lines, fmt.Sprintf("removed\t%s\t%s\t%d.%d\t%s\t%s",
			gvk.GroupVersion().String(), gvk.Kind, major, minor,
			replacement.GroupVersion().String(), replacement.Kind))
	}
	sort.Strings(lines)
	lines = append([]string{fmt.Sprintf("release\t%d.%d", releaseMajor, releaseMinor)}, lines...)
	for _, line := range lines {
		if _, err := fmt.Fprintln(w, line); err != nil {
			return err
		}
	}
	return nil
}
