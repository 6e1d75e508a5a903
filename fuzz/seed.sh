#!/usr/bin/env bash
# Seeds the fuzz corpora from test_data/ and a few settings; idempotent.
set -euo pipefail
cd "$(dirname "$0")"
mkdir -p corpus/validate corpus/differential corpus/settings corpus/structured
settings=(
  '{"criteria":"containsAnyOf","values":["owner","example.com/application"]}'
  '{"criteria":"DoesNotContainOtherThan","values":["Example.com/Owner"]}'
  '{"criteria":"containsAllOf","values":[]}'
  '{"criteria":"bogus","values":["a/b/c","-x"],"valuess":1}'
  '{"criteria":"doesNotContainOtherThan","values":["example.com/*"],"allowKubernetesBookkeeping":false,"allowExistingViolations":true}'
)
i=0
for s in "${settings[@]}"; do
  printf '%s' "$s" > "corpus/settings/seed-$i.json"
  i=$((i + 1))
done
for request in ../test_data/*.json; do
  name=$(basename "$request" .json)
  for target in validate differential; do
    printf '{"request":%s,"settings":%s}' "$(cat "$request")" "${settings[0]}" > "corpus/$target/seed-$name.json"
  done
done
# What a real control plane sent, and the requests written by hand beside it
# (AdmissionReviews: their requests).
for review in ../test_data/cluster/recorded/*/*.json ../test_data/cluster/written/*.json; do
  [ "$(basename "$review")" = index.json ] && continue
  name=recorded-$(basename "$(dirname "$review")")-$(basename "$review" .json)
  for target in validate differential; do
    printf '{"request":%s,"settings":%s}' "$(jq -c .request "$review")" "${settings[0]}" > "corpus/$target/seed-$name.json"
  done
done
# The reader's targets: the repository's manifests, YAML and JSON.
mkdir -p corpus/manifests corpus/manifests_cut corpus/manifests_json
for file in ../examples/*.yaml ../examples/*/*.yaml ../cluster/manifests/*.yaml ../test_data/manifests/* ../test_data/set/*/*.yaml ../test_data/modes/*.yaml; do
  [ -f "$file" ] || continue
  name=$(echo "${file#../}" | tr '/' '-')
  for target in manifests manifests_cut; do
    cp "$file" "corpus/$target/seed-$name"
  done
done
for file in ../test_data/*.json ../test_data/modes/*.json; do
  [ -f "$file" ] || continue
  name=$(echo "${file#../}" | tr '/' '-')
  cp "$file" "corpus/manifests/seed-$name"
  cp "$file" "corpus/manifests_json/seed-$name"
done
