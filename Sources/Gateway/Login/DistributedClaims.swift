import Foundation
import JOSE
import OAuth

/// Aggregated and distributed claims (OIDC Core §5.6.2): an ID token or userinfo answer that
/// leaves a claim out and names, in `_claim_names`, the source in `_claim_sources` that holds
/// it — a signed JWT given inline (`JWT`, aggregated), or an `endpoint` to call with an access
/// token (distributed; Entra ID does this above 200 groups). The pure half: which sources a
/// session needs, whether the issuer allows one, and what its answer says. The calls are
/// `ClaimsSources`' (ClaimsSources+Distributed.swift).
enum DistributedClaims {
    /// At most this many sources are asked per login.
    static let maxSources = 4
    /// At most this many bytes in one source's answer (or inline JWT).
    static let maxAnswerBytes = 64 << 10
    /// At most this many bytes (JSON) of the claims a session keeps from all its sources.
    static let maxKeptBytes = 16 << 10
    /// The session claim that records what was resolved, when, and what could not be.
    static let record = "_distributed"

    /// Claims no source may supply, whatever `_claim_names` says. A source speaks for its
    /// own claims (§5.6.2), not for the OP's identity of the user: who the user is (`iss`,
    /// `sub`, `tid`, `email`, `email_verified`: `require.email_domains` reads them), for whom
    /// and when the token was issued (`aud`, `azp`, `nonce`, `exp`, `iat`, `nbf`, `cnf`,
    /// `sid`), and how and when the user authenticated (`acr`, `amr`, `auth_time`, OIDC Core
    /// §2: a source naming them would pass a step-up route for a login that never did it).
    static let opOnly: Set<String> = [
        "iss", "sub", "aud", "azp", "tid", "email", "email_verified", "nonce", "exp", "iat", "nbf", "cnf", "sid",
        "acr", "amr", "auth_time"
    ]

    /// One member of `_claim_sources` that some wanted claim names.
    struct Source: Equatable {
        var name: String
        /// The claims (of those the session keeps) this source holds.
        var claims: [String]
        enum Kind: Equatable {
            /// §5.6.2 aggregated: a JWT signed by the claims provider, given inline.
            case jwt(String)
            /// §5.6.2 distributed: call `endpoint`, with this source's own `access_token` if
            /// it gives one (else the session's).
            case endpoint(String, accessToken: String?)
        }
        var kind: Kind
    }

    /// A claim that could not be had, and why (for the log and the refusal's detail).
    struct Failure: Error, Equatable {
        var claims: [String]
        var reason: String
    }

    /// The sources `claims` point to for the names in `wanted`; failures for references that
    /// cannot be followed (no such source, neither JWT nor endpoint, too many sources).
    static func sources(_ claims: JSONObject, wanted: Set<String>) -> (sources: [Source], failures: [Failure]) {
        guard case .object(let names)? = claims["_claim_names"] else { return ([], []) }
        let table: JSONObject
        if case .object(let t)? = claims["_claim_sources"] { table = t } else { table = JSONObject() }
        var bySource: [String: [String]] = [:]
        var order: [String] = []
        var failures: [Failure] = []
        for claim in names.names where wanted.contains(claim) {
            guard let source = names[claim]?.string else {
                failures.append(Failure(claims: [claim], reason: "_claim_names.\(claim) is not a source name"))
                continue
            }
            if bySource[source] == nil { order.append(source) }
            bySource[source, default: []].append(claim)
        }
        var out: [Source] = []
        for source in order {
            let held = bySource[source] ?? []
            guard out.count < maxSources else {
                failures.append(Failure(claims: held, reason: "more than \(maxSources) claim sources"))
                continue
            }
            guard case .object(let s)? = table[source] else {
                failures.append(Failure(claims: held, reason: "_claim_sources has no \(source)"))
                continue
            }
            if let jwt = s["JWT"]?.string {
                out.append(Source(name: source, claims: held, kind: .jwt(jwt)))
            } else if let endpoint = s["endpoint"]?.string {
                // RFC 6750 §2.1: the source's token goes out as `Bearer <b64token>`; one with
                // any other byte (a CR/LF would split the call) is not used.
                if let token = s["access_token"], token.string.map(BearerTokenExtractor.isB64Token) != true {
                    failures.append(Failure(claims: held, reason: "source \(source)'s access_token is not a b64token"))
                    continue
                }
                out.append(
                    Source(
                        name: source, claims: held, kind: .endpoint(endpoint, accessToken: s["access_token"]?.string)))
            } else {
                failures.append(Failure(claims: held, reason: "source \(source) has neither JWT nor endpoint"))
            }
        }
        return (out, failures)
    }

    /// Whether `endpoint` is on the issuer's `claim_sources` list: the same scheme and
    /// authority (host and port) as an entry, and a path that is the entry's or below it
    /// (at a `/`). A path that climbs (`..`, `.`, or their percent-encodings) never matches.
    static func allowed(_ endpoint: String, by list: [String]) -> Bool {
        guard let e = parts(endpoint) else { return false }
        let segments = e.path.split(separator: "/", omittingEmptySubsequences: false)
        if segments.contains(where: { $0 == ".." || $0 == "." }) || e.path.lowercased().contains("%2e") {
            return false
        }
        return list.contains { entry in
            guard let a = parts(entry), a.scheme == e.scheme, a.authority == e.authority else { return false }
            if a.path.isEmpty || a.path == "/" || e.path == a.path { return true }
            let prefix = a.path.hasSuffix("/") ? a.path : a.path + "/"
            return e.path.hasPrefix(prefix)
        }
    }

    /// scheme, lower-case authority (no userinfo), path (without query or fragment) of an
    /// http(s) URL; nil for anything else.
    static func parts(_ url: String) -> (scheme: String, authority: String, path: String)? {
        guard let sep = url.range(of: "://") else { return nil }
        let scheme = url[..<sep.lowerBound].lowercased()
        guard scheme == "https" || scheme == "http" else { return nil }
        let rest = url[sep.upperBound...]
        let end = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        let authority = rest[..<end].lowercased()
        guard !authority.isEmpty, !authority.contains("@") else { return nil }
        var path = rest[end...]
        if let q = path.firstIndex(where: { $0 == "?" || $0 == "#" }) { path = path[..<q] }
        return (scheme, authority, String(path))
    }

    /// The claims a source's answer gives for `names`: a JSON object, or a JWT (`verify`
    /// checks it against the issuer's keys and returns its claims). A name the answer lacks
    /// is a failure, not an empty claim.
    static func claims(
        fromAnswer body: [UInt8], contentType: String?, names: [String], verify: (String) throws -> JSONObject
    ) -> Result<JSONObject, Failure> {
        guard body.count <= maxAnswerBytes else {
            return .failure(Failure(claims: names, reason: "the answer is larger than \(maxAnswerBytes) bytes"))
        }
        let type = contentType?.lowercased() ?? ""
        let answer: JSONObject
        do {
            if type.hasPrefix("application/jwt") {
                answer = try verify(
                    String(decoding: body, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
            } else if type.hasPrefix("application/json") {
                answer = try JSONParser.parseObject(body, what: "claim source answer")
            } else {
                return .failure(
                    Failure(
                        claims: names, reason: "the answer is \(type.isEmpty ? "untyped" : type), not JSON or a JWT"))
            }
        } catch {
            return .failure(Failure(claims: names, reason: "the answer was refused: \(error)"))
        }
        return pick(names, from: answer)
    }

    /// `names` from a source's claims; a failure naming what is missing.
    static func pick(_ names: [String], from answer: JSONObject) -> Result<JSONObject, Failure> {
        var out = JSONObject()
        for name in names {
            guard let value = answer[name] else {
                return .failure(Failure(claims: names, reason: "the answer has no \(name)"))
            }
            out[name] = value
        }
        return .success(out)
    }

    /// The session's record: when the sources were asked, which claims came from them, and
    /// why the others could not be had.
    static func record(resolved: [String], failures: [Failure], at now: Int64) -> JSONValue {
        var failed = JSONObject()
        for f in failures {
            for c in f.claims { failed[c] = .string(String(f.reason.prefix(200))) }
        }
        return .object(
            JSONObject([
                "at": .number(String(now)), "claims": .array(resolved.map { .string($0) }), "failed": .object(failed)
            ]))
    }

    /// For a refusal's log detail: why the claims among `names` that a source failed to give
    /// are missing ("" when none is).
    static func failures(in claims: JSONObject, of names: Set<String>) -> String {
        let said = names.sorted().compactMap { name in failure(of: name, in: claims).map { "\(name): \($0)" } }
        return said.isEmpty ? "" : "; distributed claims missing (\(said.joined(separator: "; ")))"
    }

    /// Why `claim` is missing from a session, if a source failed to give it.
    static func failure(of claim: String, in claims: JSONObject) -> String? {
        guard case .object(let r)? = claims[record], case .object(let failed)? = r["failed"] else { return nil }
        return failed[claim]?.string
    }
}
