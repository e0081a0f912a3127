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
        // Off unless the file or the environment names a collector: then no variable is read,
        // so one meant for another program cannot refuse the config.
        let endpoint = environmentEndpoint(env)
        guard node != nil || endpoint != nil else { return nil }
        // The variables first, then the file's keys over them (TracingConfig.keyTable). A
        // variable the file's key replaces is not read.
        var cfg = environmentDefaults(env, endpoint: endpoint ?? "", replaced: Set(map.keys), r, node)
        TracingConfig.keyTable.read(map, into: &cfg, path: "tracing", r)
        let endpointNode = map["otlp_endpoint"] ?? node
        guard !cfg.endpoint.isEmpty else {
            // A key that is no URL was reported by its row.
            if map["otlp_endpoint"] == nil {
                r.problem(
                    "tracing.otlp_endpoint", node,
                    "is required: the collector's OTLP/HTTP traces URL, e.g. http://127.0.0.1:4318/v1/traces (or set OTEL_EXPORTER_OTLP_ENDPOINT)"
                )
            }
            return nil
        }
        guard let url = ConfigValues.url(cfg.endpoint), !url.host.isEmpty else {
            // Not echoed when it holds a userinfo (a password, which is why it is refused).
            let shown = cfg.endpoint.contains("@") ? "the endpoint" : "\"\(cfg.endpoint)\""
            r.problem(
                "tracing.otlp_endpoint", endpointNode, "\(shown) is not an http(s) URL without query or userinfo")
            return nil
        }
        if url.scheme == "https", cfg.caFile == nil {
            cfg.caFile = variable("OTEL_EXPORTER_OTLP_CERTIFICATE", env)
        }
        if cfg.timeout < 0.1 || cfg.timeout > 60 {
            r.problem("tracing.timeout", map["timeout"] ?? node, "must be from 100ms to 60s")
        }
        return cfg
    }

    /// The variable for traces (`OTEL_EXPORTER_OTLP_TRACES_…`), else the one for every signal.
    private static func variable(_ name: String, _ env: [String: String]) -> String? {
        let traces = name.replacingOccurrences(of: "OTEL_EXPORTER_OTLP_", with: "OTEL_EXPORTER_OTLP_TRACES_")
        return [traces, name].lazy.compactMap { env[$0].flatMap { $0.isEmpty ? nil : $0 } }.first
    }

    /// The collector the variables name: the traces variable as it is, else the general one
    /// with the signal's path added.
    private static func environmentEndpoint(_ env: [String: String]) -> String? {
        if let full = env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"], !full.isEmpty { return full }
        guard let base = env["OTEL_EXPORTER_OTLP_ENDPOINT"], !base.isEmpty else { return nil }
        return base.hasSuffix("/") ? base + "v1/traces" : base + "/v1/traces"
    }

    /// What the OpenTelemetry variables say, before the file's keys: the service name and
    /// resource, the sampler, and the headers and timeout unless the file gives them
    /// (`replaced`: the file's keys).
    private static func environmentDefaults(
        _ env: [String: String], endpoint: String, replaced: Set<String>, _ r: ConfigReader, _ node: Node?
    ) -> TracingConfig {
        var cfg = TracingConfig(endpoint: endpoint)
        if let p = variable("OTEL_EXPORTER_OTLP_PROTOCOL", env), p != "http/protobuf" {
            r.problem("tracing", node, "OTEL_EXPORTER_OTLP_PROTOCOL=\(p): tokengate exports over http/protobuf only")
        }
        for (key, value) in keyValueList(env["OTEL_RESOURCE_ATTRIBUTES"] ?? "") {
            if key == "service.name" { cfg.serviceName = value } else { cfg.resourceAttributes.append((key, value)) }
        }
        if let name = env["OTEL_SERVICE_NAME"], !name.isEmpty { cfg.serviceName = name }
        cfg.sampleRatio = samplerRatio(env, r, node) ?? cfg.sampleRatio
        if !replaced.contains("headers"), let list = variable("OTEL_EXPORTER_OTLP_HEADERS", env) {
            for (name, value) in keyValueList(list) {
                if let line = headerLine(name, value) {
                    cfg.headers.append(line)
                } else {
                    r.problem("tracing", node, "OTEL_EXPORTER_OTLP_HEADERS: \"\(name)\" is not a header name and value")
                }
            }
        }
        if !replaced.contains("timeout"), let ms = variable("OTEL_EXPORTER_OTLP_TIMEOUT", env) {
            if let v = Double(ms), v > 0 {
                cfg.timeout = v / 1000
            } else {
                r.problem("tracing", node, "OTEL_EXPORTER_OTLP_TIMEOUT=\(ms) is not a number of milliseconds")
            }
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
    static func headerLine(_ name: String, _ value: String) -> String? {
        guard !name.isEmpty, name.utf8.allSatisfy({ HeaderRules.isTokenChar($0) }),
            value.utf8.allSatisfy({ $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7F) })
        else { return nil }
        return "\(name): \(value)"
    }
}
