import Foundation
import JOSE

/// One access evaluation as OpenID AuthZEN Authorization API 1.0 §6.1 writes it: the
/// `subject` (§5.1), the `action` (§5.3), the `resource` (§5.2) and the `context` (§5.4).
/// `key` names what decides the answer (everything sent but the time), for the decision
/// cache. A request answered from the cache needs only the key: the JSON is made for a
/// call (`body`), not before.
struct AuthZENEvaluation {
    let subjectType: String
    let subjectID: String
    let subjectProperties: JSONObject
    /// `action.name`: the request's method.
    let action: String
    let resourceType: String
    let resourceID: String
    /// `resource.properties`, all strings (route, host, path, a template's variables), in
    /// this order; a later name never replaces an earlier one.
    let resourceProperties: [(String, String)]
    let ip: String
    /// When it was asked (the PDP call's `context.time`): set when a call is made.
    var time: Double
    /// SHA-256 of the authorizer's name and every member but the time, each
    /// length-prefixed.
    let key: DecisionKey

    init(
        authorizer: String = "", subjectType: String, subjectID: String, subjectProperties: JSONObject = JSONObject(),
        action: String,
        resourceType: String = "route", resourceID: String, resourceProperties: [(String, String)] = [],
        ip: String, time: Double
    ) {
        self.subjectType = subjectType
        self.subjectID = subjectID
        self.subjectProperties = subjectProperties
        self.action = action
        self.resourceType = resourceType
        self.resourceID = resourceID
        self.resourceProperties = resourceProperties
        self.ip = ip
        self.time = time
        var material: [UInt8] = []
        material.reserveCapacity(256)
        func add(_ s: String) {
            // Each member prefixed with its length (four bytes, big-endian): no two lists of
            // members make the same material.
            let n = UInt32(truncatingIfNeeded: s.utf8.count)
            material.append(UInt8(truncatingIfNeeded: n >> 24))
            material.append(UInt8(truncatingIfNeeded: n >> 16))
            material.append(UInt8(truncatingIfNeeded: n >> 8))
            material.append(UInt8(truncatingIfNeeded: n))
            material.append(contentsOf: s.utf8)
        }
        add(authorizer)
        add(subjectType)
        add(subjectID)
        add(subjectProperties.isEmpty ? "" : JSONSerializer.serialize(.object(subjectProperties)))
        add(action)
        add(resourceType)
        add(resourceID)
        for (name, value) in resourceProperties {
            add(name)
            add(value)
        }
        add(ip)
        key = DecisionKey(Digest.sha256.hash(material))
    }

    var subject: JSONObject {
        var o = JSONObject(["type": .string(subjectType), "id": .string(subjectID)])
        if !subjectProperties.isEmpty { o["properties"] = .object(subjectProperties) }
        return o
    }

    var resource: JSONObject {
        var properties = JSONObject()
        for (name, value) in resourceProperties where properties[name] == nil { properties[name] = .string(value) }
        var o = JSONObject(["type": .string(resourceType), "id": .string(resourceID)])
        if !properties.isEmpty { o["properties"] = .object(properties) }
        return o
    }

    var context: JSONObject {
        JSONObject(["ip_address": .string(ip), "time": .string(Self.rfc3339(time))])
    }

    /// `POST access/v1/evaluation`'s body (§6.1).
    var body: [UInt8] {
        let o = JSONObject([
            "subject": .object(subject), "action": .object(JSONObject(["name": .string(action)])),
            "resource": .object(resource), "context": .object(context)
        ])
        return Array(JSONSerializer.serialize(.object(o)).utf8)
    }

    /// `POST access/v1/evaluations`'s body (§7.1) for evaluations that share this one's
    /// subject, action and context and differ in their resource: the shared members are the
    /// request's defaults (§7.1.1), each evaluation names its resource.
    static func batchBody(_ first: AuthZENEvaluation, resources: [JSONObject]) -> [UInt8] {
        let o = JSONObject([
            "subject": .object(first.subject), "action": .object(JSONObject(["name": .string(first.action)])),
            "context": .object(first.context),
            "evaluations": .array(resources.map { .object(JSONObject(["resource": .object($0)])) })
        ])
        return Array(JSONSerializer.serialize(.object(o)).utf8)
    }

    /// RFC 3339 in UTC, whole seconds.
    static func rfc3339(_ t: Double) -> String {
        var seconds = time_t(t.rounded(.down))
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : String(n) }
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T"
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))Z"
    }
}

/// A question's name in the decision cache: its SHA-256, as four words (hashed and compared
/// as such, with no text made per request).
struct DecisionKey: Hashable, Sendable {
    let a: UInt64, b: UInt64, c: UInt64, d: UInt64

    init(_ digest: [UInt8]) {
        precondition(digest.count == 32, "a SHA-256")
        func word(_ i: Int) -> UInt64 { digest[i..<i + 8].reduce(0) { $0 << 8 | UInt64($1) } }
        a = word(0)
        b = word(8)
        c = word(16)
        d = word(24)
    }
}

/// A PDP's decision (§5.5): only a JSON object whose `decision` is a boolean is one. Its
/// `context` may give reasons (§5.5.1): `reason_user` may be shown to the caller,
/// `reason_admin` is for the log only.
struct AuthZENDecision: Sendable, Equatable {
    var allowed: Bool
    var reasonUser: String?
    var reasonAdmin: String?

    /// The decision in `value`, or nil when it holds none.
    init?(_ value: JSONValue) {
        guard let o = value.object, let decision = o["decision"]?.bool else { return nil }
        allowed = decision
        let context = o["context"]?.object
        reasonUser = context.flatMap { Self.reason($0["reason_user"]) }
        reasonAdmin = context.flatMap { Self.reason($0["reason_admin"]) }
    }

    init(allowed: Bool, reasonUser: String? = nil, reasonAdmin: String? = nil) {
        self.allowed = allowed
        self.reasonUser = reasonUser
        self.reasonAdmin = reasonAdmin
    }

    /// A reason is a string, or an object of strings by language tag (§5.5.2's examples:
    /// `{"en": …}`, `{"en-403": …}`): English first, else the first. At most 200 characters
    /// of printable text: it may go into a header.
    static func reason(_ value: JSONValue?) -> String? {
        let text: String?
        switch value {
        case .string(let s): text = s
        case .object(let o):
            var found: String?
            for name in o.names where found == nil && name.lowercased().hasPrefix("en") { found = o[name]?.string }
            text = found ?? o.names.lazy.compactMap { o[$0]?.string }.first
        default: text = nil
        }
        guard let text else { return nil }
        let clean = String(
            String.UnicodeScalarView(text.unicodeScalars.filter { $0.value >= 0x20 && $0.value < 0x7f && $0 != "\"" }))
        return clean.isEmpty ? nil : String(clean.prefix(200))
    }

    /// A 200 answer's body to a single evaluation (§6.2).
    static func parse(status: Int, body: [UInt8]) -> Result<AuthZENDecision, AuthZENError> {
        guard status == 200 else { return .failure(.status(status)) }
        guard let value = try? JSONParser.parse(body) else { return .failure(.unusable("not JSON")) }
        guard let d = AuthZENDecision(value) else { return .failure(.unusable("no boolean decision")) }
        return .success(d)
    }

    /// A 200 answer's body to `count` evaluations (§7.2): one decision each, in order.
    static func parseBatch(status: Int, body: [UInt8], count: Int) -> Result<[AuthZENDecision], AuthZENError> {
        guard status == 200 else { return .failure(.status(status)) }
        guard let value = try? JSONParser.parse(body), let list = value.object?["evaluations"]?.array else {
            return .failure(.unusable("no evaluations array"))
        }
        let decisions = list.compactMap(AuthZENDecision.init)
        guard decisions.count == list.count, list.count == count else {
            return .failure(.unusable("\(list.count) evaluations for \(count) asked, or one without a decision"))
        }
        return .success(decisions)
    }
}

/// Why a PDP's answer is no decision: never cached, and `on_error` decides.
enum AuthZENError: Error, Sendable, Equatable, CustomStringConvertible {
    case status(Int)
    case unusable(String)
    case unreachable(String)

    var description: String {
        switch self {
        case .status(let s): "the PDP answered \(s)"
        case .unusable(let why): "the PDP's answer is unusable: \(why)"
        case .unreachable(let why): "the PDP cannot be asked: \(why)"
        }
    }
}
