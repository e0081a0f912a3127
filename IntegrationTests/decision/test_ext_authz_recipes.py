"""The ext_authz recipes in deploy/ext-authz/ are what their tools accept: the Kubernetes
resources against their kinds' schemas, strictly (kubernetes-validate --strict for Kubernetes'
own kinds; for the custom resources, which kubernetes-validate passes unchecked, the projects'
own CRD schemas in IntegrationTests/fixtures/crd-schemas/); Envoy's config against Envoy's own
v3 messages (PyPI xds-protos), unknown fields refused; and the tokengate config they point at
passes check-config with the Check service on the port they name."""
import copy
import json
import pathlib
import subprocess

import jsonschema
import pytest
import yaml
from google.protobuf import json_format

# Importing them registers the typed configs the Envoy recipe names (its Any fields).
from envoy.config.bootstrap.v3 import bootstrap_pb2
from envoy.extensions.filters.http.ext_authz.v3 import ext_authz_pb2  # noqa: F401
from envoy.extensions.filters.http.router.v3 import router_pb2  # noqa: F401
from envoy.extensions.filters.network.http_connection_manager.v3 import http_connection_manager_pb2  # noqa: F401
from envoy.extensions.upstreams.http.v3 import http_protocol_options_pb2  # noqa: F401

from support.gateway import ROOT

RECIPES = pathlib.Path(ROOT) / "deploy" / "ext-authz"
SCHEMAS = pathlib.Path(ROOT) / "IntegrationTests" / "fixtures" / "crd-schemas"
KUBERNETES = ["gateway-api.yaml", "envoy-gateway.yaml", "istio.yaml"]


def strict(schema):
    """A CRD schema as `kubectl apply --validate=strict` reads it: an object's fields are the
    ones it names, unless it keeps unknown fields on purpose."""
    if isinstance(schema, dict):
        out = {k: strict(v) for k, v in schema.items()}
        if out.get("type") == "object" and "properties" in out and "additionalProperties" not in out \
                and not out.get("x-kubernetes-preserve-unknown-fields"):
            out["additionalProperties"] = False
        return out
    if isinstance(schema, list):
        return [strict(v) for v in schema]
    return schema


def crd_schema(api_version, kind):
    group, _, version = api_version.rpartition("/")
    path = SCHEMAS / f"{group}_{kind}.json"
    if not path.exists():
        return None
    schema = strict(json.loads(path.read_text())["versions"][version])
    # apiVersion, kind and metadata are the API server's; a resource's own fields are checked.
    schema["properties"].update(apiVersion={"type": "string"}, kind={"type": "string"}, metadata={"type": "object"})
    return schema


def check_resource(doc, tmp_path):
    schema = crd_schema(doc["apiVersion"], doc["kind"])
    if schema is not None:
        jsonschema.validate(doc, schema)
        return
    # One of Kubernetes' own kinds (its schema ships with kubernetes-validate).
    path = tmp_path / "resource.yaml"
    path.write_text(yaml.safe_dump(doc))
    out = subprocess.run(["kubernetes-validate", "--strict", "--quiet", str(path)], capture_output=True, text=True)
    assert out.returncode == 0 and "Couldn't find schema" not in out.stdout + out.stderr, (doc["kind"], out)


@pytest.mark.parametrize("name", KUBERNETES)
def test_kubernetes_recipes_match_their_schemas(name, tmp_path):
    docs = [d for d in yaml.safe_load_all((RECIPES / name).read_text()) if d]
    assert docs
    for doc in docs:
        check_resource(doc, tmp_path)


@pytest.mark.parametrize("name,path,bad", [
    ("gateway-api.yaml", ["spec", "rules", 0, "filters", 0, "externalAuth"], "protocl"),
    ("envoy-gateway.yaml", ["spec", "extAuth"], "failOpn"),
    ("istio.yaml", ["spec"], "acton"),
])
def test_a_misspelled_field_is_refused(name, path, bad, tmp_path):
    """The check is worth something: one misspelled field in each recipe fails it."""
    doc = copy.deepcopy(next(d for d in yaml.safe_load_all((RECIPES / name).read_text()) if d))
    node = doc
    for key in path:
        node = node[key]
    node[bad] = node.get(bad[:-1], "x")
    with pytest.raises(jsonschema.ValidationError):
        check_resource(doc, tmp_path)


def test_the_gateway_api_recipe_names_both_protocols():
    docs = [d for d in yaml.safe_load_all((RECIPES / "gateway-api.yaml").read_text()) if d]
    auth = [f["externalAuth"] for d in docs if d["kind"] == "HTTPRoute" for r in d["spec"]["rules"]
            for f in r.get("filters", []) if f["type"] == "ExternalAuth"]
    assert {a["protocol"] for a in auth} == {"GRPC", "HTTP"}
    assert [a["http"]["path"] for a in auth if a["protocol"] == "HTTP"] == ["/_tokengate/ext_authz"]


def test_the_envoy_recipe_is_envoys_v3_config():
    config = yaml.safe_load((RECIPES / "envoy.yaml").read_text())
    bootstrap = json_format.ParseDict(config, bootstrap_pb2.Bootstrap())  # unknown fields raise
    hcm = http_connection_manager_pb2.HttpConnectionManager()
    bootstrap.static_resources.listeners[0].filter_chains[0].filters[0].typed_config.Unpack(hcm)
    authz = ext_authz_pb2.ExtAuthz()
    hcm.http_filters[0].typed_config.Unpack(authz)
    assert authz.transport_api_version == 2 and not authz.failure_mode_allow  # V3, fail closed
    assert authz.grpc_service.timeout.ToMilliseconds() == 500
    assert authz.grpc_service.initial_metadata[0].key == "x-tokengate-decision-secret"
    assert hcm.http_filters[-1].name == "envoy.filters.http.router"
    # gRPC needs HTTP/2 to the tokengate cluster.
    cluster = next(c for c in bootstrap.static_resources.clusters if c.name == authz.grpc_service.envoy_grpc.cluster_name)
    assert "envoy.extensions.upstreams.http.v3.HttpProtocolOptions" in cluster.typed_extension_protocol_options
    bad = copy.deepcopy(config)
    bad["static_resources"]["clusters"][0]["conect_timeout"] = "1s"
    with pytest.raises(json_format.ParseError):
        json_format.ParseDict(bad, bootstrap_pb2.Bootstrap())


def test_the_istio_provider_is_the_policys():
    values = yaml.safe_load((RECIPES / "istio-values.yaml").read_text())
    provider = values["meshConfig"]["extensionProviders"][0]
    policy = yaml.safe_load((RECIPES / "istio.yaml").read_text())
    assert provider["name"] == policy["spec"]["provider"]["name"] and policy["spec"]["action"] == "CUSTOM"
    assert set(provider["envoyExtAuthzGrpc"]) == {"service", "port", "timeout", "failOpen"}
    assert provider["envoyExtAuthzGrpc"]["port"] == 8081 and provider["envoyExtAuthzGrpc"]["failOpen"] is False


def test_the_shipped_config_serves_check_on_the_recipes_port():
    """config/decision.yaml (which test_ingress.py runs through check-config) serves
    the Check service where the recipes send it."""
    config = yaml.safe_load((pathlib.Path(ROOT) / "config" / "decision.yaml").read_text())
    assert config["decision"]["ext_authz_grpc"] is True
    assert {"address": "0.0.0.0:8081", "http2": True} in config["listen"]
