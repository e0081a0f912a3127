#!/usr/bin/env python3
"""Extracts the schemas of the custom resources the ext_authz recipes use from their projects'
CRD files (IntegrationTests/fixtures/crd-schemas/README.md names the sources), so that the
recipes are checked offline (IntegrationTests/decision/test_ext_authz_recipes.py). Keeps each served
version's openAPIV3Schema without its descriptions; writes one JSON file per kind.

usage: crd-schemas.py OUT_DIR CRD_FILE...   (run by hand when a source is updated)"""
import json
import pathlib
import sys

import yaml

DROP = {"description"}


def strip(node):
    if isinstance(node, dict):
        return {k: strip(v) for k, v in node.items() if k not in DROP}
    if isinstance(node, list):
        return [strip(v) for v in node]
    return node


def main(out, files):
    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    for path in files:
        for doc in yaml.safe_load_all(open(path)):
            if not doc or doc.get("kind") != "CustomResourceDefinition":
                continue
            spec = doc["spec"]
            versions = {v["name"]: strip(v["schema"]["openAPIV3Schema"]) for v in spec["versions"] if v.get("served")}
            name = f"{spec['group']}_{spec['names']['kind']}.json"
            (out / name).write_text(json.dumps({"group": spec["group"], "kind": spec["names"]["kind"],
                                                "versions": versions}, sort_keys=True, separators=(",", ":")) + "\n")
            print(name, sorted(versions))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
