"""proto/ declares a subset of Envoy's ext_authz v3 messages (proto/README.md). Every message
and field it declares must have the same full name, field number and wire type as in Envoy's
own generated messages (PyPI xds-protos), or what tokengate reads and writes would not be
what Envoy writes and reads."""
import pathlib
import re

from google.protobuf import descriptor_pool
from google.protobuf.descriptor import FieldDescriptor as FD

# Importing them registers Envoy's messages (and google.rpc.Status) in the default pool.
from envoy.service.auth.v3 import external_auth_pb2  # noqa: F401

PROTO = pathlib.Path(__file__).resolve().parents[2] / "proto"

SCALARS = {"string": FD.TYPE_STRING, "bytes": FD.TYPE_BYTES, "bool": FD.TYPE_BOOL, "int32": FD.TYPE_INT32,
           "int64": FD.TYPE_INT64, "uint32": FD.TYPE_UINT32, "uint64": FD.TYPE_UINT64}
# Types that differ in name but not on the wire: an enum is a varint, as an int32 is; bytes
# and a string are both length-delimited (a string declared as bytes is read without UTF-8
# validation: HttpRequest.body, which a client's byte must not make unreadable).
WIRE_SAME = {("int32", FD.TYPE_ENUM), ("bytes", FD.TYPE_STRING)}


def declared():
    """(message full name, field name, number, type as written, repeated) for every field in proto/."""
    out = []
    # Envoy's subset only: proto/opentelemetry holds OpenTelemetry's own files, unchanged.
    for path in sorted(p for d in ("envoy", "google") for p in (PROTO / d).rglob("*.proto")):
        package, stack = None, []
        for raw in path.read_text().splitlines():
            line = raw.split("//")[0].strip()
            if m := re.match(r"package ([\w.]+);", line):
                package = m.group(1)
            elif m := re.match(r"(message|enum|oneof|service) (\w+) \{", line):
                stack.append((m.group(1), m.group(2)))
            elif line == "}":
                stack.pop()
            elif stack and stack[-1][0] in ("message", "oneof") and (
                    m := re.match(r"(repeated )?(map<\w+, \w+>|[\w.]+) (\w+) = (\d+);", line)):
                names = [n for kind, n in stack if kind == "message"]
                out.append((".".join([package] + names), m.group(3), int(m.group(4)), m.group(2), bool(m.group(1))))
    return out


def test_every_declared_field_matches_envoys():
    pool = descriptor_pool.Default()
    fields = declared()
    assert len(fields) > 30
    for message, name, number, typ, repeated in fields:
        theirs = pool.FindMessageTypeByName(message).fields_by_name.get(name)
        assert theirs is not None, f"{message}.{name} is not in Envoy's message"
        assert theirs.number == number, f"{message}.{name}: number {number}, Envoy's {theirs.number}"
        if typ.startswith("map<"):
            assert theirs.message_type.GetOptions().map_entry, f"{message}.{name} is not a map in Envoy's"
            continue
        assert theirs.is_repeated == repeated, f"{message}.{name}: repeated differs"
        if typ in SCALARS:
            assert theirs.type == SCALARS[typ] or (typ, theirs.type) in WIRE_SAME, f"{message}.{name}: {typ}"
        elif theirs.type == FD.TYPE_ENUM:
            assert theirs.enum_type.full_name.endswith(typ.split(".")[-1]), f"{message}.{name}: enum {typ}"
        else:
            assert theirs.type == FD.TYPE_MESSAGE and theirs.message_type.full_name.endswith(typ), \
                f"{message}.{name}: {typ} against {theirs.message_type.full_name}"


def test_declared_enum_values_match_envoys():
    pool = descriptor_pool.Default()
    text = (PROTO / "envoy/config/core/v3/base.proto").read_text()
    ours = dict((n, int(v)) for n, v in re.findall(r"(\w+) = (\d+);", text.split("enum HeaderAppendAction")[1].split("}")[0]))
    theirs = pool.FindEnumTypeByName("envoy.config.core.v3.HeaderValueOption.HeaderAppendAction")
    assert ours == {v.name: v.number for v in theirs.values}
