import Foundation
import Yams

/// `tracing:` and the OpenTelemetry SDK's environment variables (OpenTelemetry
/// specification, "Environment Variable Specification" and "OTLP Exporter Configuration").
/// A key in the file wins over its variable; tracing is on when the file has `tracing:` or
/// the environment names an OTLP endpoint, and off with `OTEL_SDK_DISABLED=true` or
/// `OTEL_TRACES_EXPORTER=none`.
extension ConfigParser {
    static func tracing(_ node: Node?, _ r: ConfigReader) -> TracingConfig? {
        let env = r.environment
        func variable(_ name: String) -> String? {
            // The traces-specific variable first, then the one for every signal.
            let traces = name.replacingOccurrences(of: "OTEL_EXPORTER_OTLP_", with: "OTEL_EXPORTER_OTLP_TRACES_")
            return [traces, name].lazy.compactMap { env[$0].flatMap { $0.isEmpty ? nil : $0 } }.first
        }
        if env["OTEL_SDK_DISABLED"]?.lowercased() == "true" { return nil }
        // A comma-separated list (`otlp,console`): tokengate is on when it names otlp; any
        // other exporter is one tokengate does not have, and not an error.
        if let exporters = env["OTEL_TRACES_EXPORTER"], !exporters.isEmpty,
            !exporters.split(separator: ",").contains(where: { $0.trimmingCharacters(in: .whitespaces) == "otlp" })
        {
            return nil
        }
        var map: [String: Node] = [:]
        if let node {
            guard let m = r.mapping(node, path: "tracing", section: .tracing) else { return nil }
            map = m
        }
        // The endpoint: the key, else the traces variable as it is, else the general one with
        // the signal's path added.
        var endpoint: String?
        var endpointNode: Node? = node
        if let n = map["otlp_endpoint"] {
            endpoint = r.string(n, path: "tracing.otlp_endpoint")
            endpointNode = n
        } else if let full = env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"], !full.isEmpty {
            endpoint = full
        } else if let base = env["OTEL_EXPORTER_OTLP_ENDPOINT"], !base.isEmpty {
            endpoint = base.hasSuffix("/") ? base + "v1/traces" : base + "/v1/traces"
        }
        guard node != nil || endpoint != nil else { return nil }
        guard let endpoint else {
            if map["otlp_endpoint"] == nil {
                r.problem(
                    "tracing.otlp_endpoint", node,
                    "is required: the collector's OTLP/HTTP traces URL, e.g. http://127.0.0.1:4318/v1/traces (or set OTEL_EXPORTER_OTLP_ENDPOINT)"
                )
            }
            return nil
        }
        guard let url = ConfigValues.url(endpoint), !url.host.isEmpty else {
            // Not echoed when it holds a userinfo (a password, which is why it is refused).
            let shown = endpoint.contains("@") ? "the endpoint" : "\"\(endpoint)\""
            r.problem(
                "tracing.otlp_endpoint", endpointNode, "\(shown) is not an http(s) URL without query or userinfo")
            return nil
        }
        var cfg = TracingConfig(endpoint: endpoint)
        if url.scheme == "https" { cfg.caFile = variable("OTEL_EXPORTER_OTLP_CERTIFICATE") }
        if let p = variable("OTEL_EXPORTER_OTLP_PROTOCOL"), p != "http/protobuf" {
            r.problem("tracing", node, "OTEL_EXPORTER_OTLP_PROTOCOL=\(p): tokengate exports over http/protobuf only")
        }
        for (key, value) in keyValueList(env["OTEL_RESOURCE_ATTRIBUTES"] ?? "") {
            if key == "service.name" { cfg.serviceName = value } else { cfg.resourceAttributes.append((key, value)) }
        }
        if let name = env["OTEL_SERVICE_NAME"], !name.isEmpty { cfg.serviceName = name }
        if let n = map["service_name"], let s = r.string(n, path: "tracing.service_name") {
            if s.isEmpty { r.problem("tracing.service_name", n, "must not be empty") } else { cfg.serviceName = s }
        }
        cfg.sampleRatio = samplerRatio(env, r, node) ?? cfg.sampleRatio
        if let n = map["sample_ratio"], let s = r.string(n, path: "tracing.sample_ratio") {
            if let v = Double(s), v >= 0, v <= 1 {
                cfg.sampleRatio = v
            } else {
                r.problem("tracing.sample_ratio", n, "must be a number from 0 (none) to 1 (every trace)")
            }
        }
        if let n = map["headers"] {
            if let m = r.mapping(n, path: "tracing.headers", section: nil) {
                for (name, valueNode) in m.sorted(by: { $0.key < $1.key }) {
                    if let value = r.string(valueNode, path: "tracing.headers.\(name)") {
                        if let line = headerLine(name, value) {
                            cfg.headers.append(line)
                        } else {
                            r.problem("tracing.headers.\(name)", valueNode, "is not a header name and value")
                        }
                    }
                }
            }
        } else if let list = variable("OTEL_EXPORTER_OTLP_HEADERS") {
            for (name, value) in keyValueList(list) {
                if let line = headerLine(name, value) {
                    cfg.headers.append(line)
                } else {
                    r.problem("tracing", node, "OTEL_EXPORTER_OTLP_HEADERS: \"\(name)\" is not a header name and value")
                }
            }
        }
        if let n = map["incoming"], let s = r.string(n, path: "tracing.incoming") {
            if let v = TracingConfig.Incoming(rawValue: s) {
                cfg.incoming = v
            } else {
                r.problem("tracing.incoming", n, "must be join or restart")
            }
        }
        if let n = map["timeout"], let v = r.duration(n, path: "tracing.timeout") {
            cfg.timeout = v
        } else if let ms = variable("OTEL_EXPORTER_OTLP_TIMEOUT") {
            if let v = Double(ms), v > 0 {
                cfg.timeout = v / 1000
            } else {
                r.problem("tracing", node, "OTEL_EXPORTER_OTLP_TIMEOUT=\(ms) is not a number of milliseconds")
            }
        }
        if cfg.timeout < 0.1 || cfg.timeout > 60 {
            r.problem("tracing.timeout", map["timeout"] ?? node, "must be from 100ms to 60s")
        }
        if let n = map["ca_file"], let s = r.string(n, path: "tracing.ca_file") {
            cfg.caFile = s.hasPrefix("/") ? s : "\(r.baseDirectory)/\(s)"
        }
        return cfg
    }

    /// `OTEL_TRACES_SAMPLER` and its argument as a ratio of new traces; the gateway's sampler
    /// is always parent-based, so `traceidratio` and `parentbased_traceidratio` read alike.
    private static func samplerRatio(_ env: [String: String], _ r: ConfigReader, _ node: Node?) -> Double? {
        guard let sampler = env["OTEL_TRACES_SAMPLER"], !sampler.isEmpty else { return nil }
        switch sampler {
        case "always_on", "parentbased_always_on": return 1
        case "always_off", "parentbased_always_off": return 0
        case "traceidratio", "parentbased_traceidratio":
            guard let arg = env["OTEL_TRACES_SAMPLER_ARG"], !arg.isEmpty else { return 1 }
            if let v = Double(arg), v >= 0, v <= 1 { return v }
            r.problem("tracing", node, "OTEL_TRACES_SAMPLER_ARG=\(arg) is not a ratio from 0 to 1")
            return nil
        default:
            r.problem(
                "tracing", node,
                "OTEL_TRACES_SAMPLER=\(sampler): tokengate samples with (parentbased_)always_on, always_off or traceidratio"
            )
            return nil
        }
    }

    /// `key1=value1,key2=value2`, each value percent-decoded (the W3C Baggage form the
    /// OpenTelemetry variables use); entries without `=` are skipped.
    static func keyValueList(_ text: String) -> [(String, String)] {
        text.split(separator: ",").compactMap { item in
            guard let eq = item.firstIndex(of: "=") else { return nil }
            let key = item[..<eq].trimmingCharacters(in: .whitespaces)
            let raw = item[item.index(after: eq)...].trimmingCharacters(in: .whitespaces)
            guard !key.isEmpty else { return nil }
            return (key, raw.removingPercentEncoding ?? raw)
        }
    }

    /// `Name: value` for libcurl, or nil when the name is not a token or the value holds a
    /// control byte (which would split the export's head).
    private static func headerLine(_ name: String, _ value: String) -> String? {
        guard !name.isEmpty, name.utf8.allSatisfy({ HeaderRules.isTokenChar($0) }),
            value.utf8.allSatisfy({ $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7F) })
        else { return nil }
        return "\(name): \(value)"
    }
}
