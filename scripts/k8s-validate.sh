#!/usr/bin/env bash
# Validates deploy/kubernetes offline: every manifest against the Kubernetes API schemas that
# PyPI's kubernetes-validate ships (--strict: unknown fields are errors), the kustomize
# overlays rendered with `kubectl kustomize` (kustomize is built into kubectl; no cluster is
# contacted), and the tokengate configs in them with `tokengate check-config`.
# Usage: scripts/k8s-validate.sh [TOKENGATE_BINARY]
# (IntegrationTests/requirements.txt installs the tool)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-.build-image/tokengate}
# The oldest and the newest version checked: 1.30 is the first with the preStop sleep action
# (the image has no sleep binary); 1.37 is the newest schema kubernetes-validate ships.
versions=(1.30.0 1.37.0)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0
check() { local what=$1; shift; if "$@"; then echo "ok - $what"; passed=$((passed + 1)); else echo "FAIL - $what"; failed=$((failed + 1)); fi; }
validate() {   # file...
  local v
  for v in "${versions[@]}"; do
    kubernetes-validate --strict --quiet -k "$v" "$@" > "$tmp/out" 2>&1 || { cat "$tmp/out"; return 1; }
  done
}

echo "== Kubernetes manifests (kubernetes-validate --strict, Kubernetes ${versions[*]})"
# The validator itself: a misspelled field must fail, or a pass would mean nothing.
printf 'apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec: {portz: []}\n' > "$tmp/bad.yaml"
check "kubernetes-validate --strict rejects an unknown field" bash -c '! kubernetes-validate --strict --quiet "$1" > /dev/null 2>&1' _ "$tmp/bad.yaml"
for f in deploy/kubernetes/*.yaml deploy/kubernetes/base/*.yaml; do
  [[ $(basename "$f") == kustomization.yaml ]] && continue
  check "$f" validate "$f"
done
if command -v kubectl > /dev/null; then
  for o in deploy/kubernetes/overlays/*/; do
    o=${o%/}
    check "kubectl kustomize $o renders" bash -c 'kubectl kustomize "$1" > "$2"' _ "$o" "$tmp/$(basename "$o").yaml"
    check "$o (rendered)" validate "$tmp/$(basename "$o").yaml"
    check "$o: NetworkPolicy keeps port admin to the monitoring namespace" python3 - "$tmp/$(basename "$o").yaml" <<'PY'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
pol = [d for d in docs if d["kind"] == "NetworkPolicy"]
assert len(pol) == 1, pol
rules = pol[0]["spec"]["ingress"]
admin = [r for r in rules if any(p["port"] in ("admin", 9901) for p in r["ports"])]
assert admin and all(r.get("from") for r in admin), admin
svc = [d for d in docs if d["kind"] == "Service"]
assert all(p["targetPort"] not in ("admin", 9901) for s in svc for p in s["spec"]["ports"])
dep = [d for d in docs if d["kind"] == "Deployment"][0]["spec"]["template"]["spec"]
tg = [c for c in dep["containers"] if c["name"] == "tokengate"][0]
sc = tg["securityContext"]
assert sc["readOnlyRootFilesystem"] and sc["runAsNonRoot"] and sc["runAsUser"] == 10001
assert sc["allowPrivilegeEscalation"] is False and sc["capabilities"]["drop"] == ["ALL"]
assert sc["seccompProfile"]["type"] == "RuntimeDefault"
assert tg["livenessProbe"]["httpGet"]["path"] == "/healthz" and tg["readinessProbe"]["httpGet"]["path"] == "/readyz"
PY
  done
else
  # Without kubectl the overlays' patches cannot be applied; their base files are checked
  # one by one above.
  echo "   kubectl not found: the overlays are not rendered, only the base files are validated"
fi
for c in deploy/kubernetes/overlays/*/tokengate.yaml; do
  check "tokengate check-config $c" bash -c '"$1" check-config "$2" > /dev/null' _ "$bin" "$c"
done
echo "k8s manifests: $passed passed, $failed failed"
(( failed == 0 ))
