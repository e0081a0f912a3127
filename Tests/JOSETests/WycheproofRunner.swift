import Foundation

@testable import JOSE

/// Wycheproof files (C2SP/wycheproof testvectors_v1 format).
enum WycheproofRunner {
    static let allAlgorithms = Set(JWSAlgorithm.allCases)

    /// ECDSA P1363, RSA PKCS#1 v1.5, RSA-PSS, Ed25519: raw signature checks with the group's key.
    static func signatures(_ json: [String: Any], alg fixed: JWSAlgorithm?) -> FileResult {
        var r = FileResult()
        for group in json["testGroups"] as? [[String: Any]] ?? [] {
            let jwkObject = (group["publicKeyJwk"] ?? group["keyJwk"]) as? [String: Any] ?? ecJWK(group)
            let key = jwkObject.flatMap { try? JWK(json: jsonText($0)) }
            var alg = fixed
            if alg == nil, let name = jwkObject?["alg"] as? String { alg = JWSAlgorithm(rawValue: name) }
            if let f = fixed, f.family == .ecdsa {
                alg = ecdsaAlg(curve: jwkObject?["crv"] as? String, sha: group["sha"] as? String)
            }
            for t in group["tests"] as? [[String: Any]] ?? [] {
                let id = "tcId \(t["tcId"] ?? "?")"
                let expected = Expectation(t["result"] as? String)
                guard let msg = [UInt8](hex: t["msg"] as? String ?? ""),
                    let sig = [UInt8](hex: t["sig"] as? String ?? "")
                else {
                    r.record(id, expected: expected, got: false, note: "(bad hex)")
                    continue
                }
                guard let key, let alg else {
                    r.record(id, expected: expected, got: false, note: "(key or alg refused)")
                    continue
                }
                let ok = (try? key.verify(alg, message: msg, signature: sig)) ?? false
                r.record(id, expected: expected, got: ok)
            }
        }
        return r
    }

    static func ecdsaAlg(curve: String?, sha: String?) -> JWSAlgorithm? {
        switch (curve, sha) {
        case ("P-256", "SHA-256"): .ES256
        case ("P-384", "SHA-384"): .ES384
        case ("P-521", "SHA-512"): .ES512
        default: nil
        }
    }

    /// Groups without publicKeyJwk: the key from wx/wy (big-endian, maybe a leading 00).
    static func ecJWK(_ group: [String: Any]) -> [String: Any]? {
        guard let pk = group["publicKey"] as? [String: Any], let curve = pk["curve"] as? String,
            var x = [UInt8](hex: pk["wx"] as? String ?? ""), var y = [UInt8](hex: pk["wy"] as? String ?? "")
        else { return nil }
        let (crv, size): (String, Int) =
            switch curve {
            case "secp256r1": ("P-256", 32)
            case "secp384r1": ("P-384", 48)
            case "secp521r1": ("P-521", 66)
            default: ("?", 0)
            }
        func fit(_ v: inout [UInt8]) {
            while v.count > size, v.first == 0 { v.removeFirst() }
            while v.count < size { v.insert(0, at: 0) }
        }
        fit(&x)
        fit(&y)
        return ["kty": "EC", "crv": crv, "x": Base64URL.encode(x), "y": Base64URL.encode(y)]
    }

    /// HMAC files as HS256/384/512. Policy (RFC 7518 §3.2): a JWS HS* signature is the full
    /// MAC, so a truncated tag is invalid; a key shorter than the hash is refused.
    static func hmac(_ json: [String: Any]) -> FileResult {
        var r = FileResult()
        let alg: JWSAlgorithm? =
            switch json["algorithm"] as? String {
            case "HMACSHA256": .HS256
            case "HMACSHA384": .HS384
            case "HMACSHA512": .HS512
            default: nil
            }
        guard let alg, let digest = alg.digest else { return r }
        for group in json["testGroups"] as? [[String: Any]] ?? [] {
            let tagBits = group["tagSize"] as? Int ?? 0
            let keyBits = group["keySize"] as? Int ?? 0
            let policyInvalid = tagBits < digest.size * 8 || keyBits < digest.size * 8
            for t in group["tests"] as? [[String: Any]] ?? [] {
                let id = "tcId \(t["tcId"] ?? "?")"
                var expected = Expectation(t["result"] as? String)
                if policyInvalid, case .valid = expected {
                    expected = .invalid
                    r.byPolicy += 1
                }
                guard let k = [UInt8](hex: t["key"] as? String ?? ""),
                    let msg = [UInt8](hex: t["msg"] as? String ?? ""),
                    let tag = [UInt8](hex: t["tag"] as? String ?? "")
                else {
                    r.record(id, expected: expected, got: false)
                    continue
                }
                let key = try? JWK(json: jsonText(["kty": "oct", "k": Base64URL.encode(k)]))
                let ok = key.map { (try? $0.verify(alg, message: msg, signature: tag)) ?? false } ?? false
                r.record(id, expected: expected, got: ok)
            }
        }
        return r
    }

    /// json_web_signature / json_web_key files: compact JWS verified with the group's key
    /// (or key set), every algorithm allowed — the key's own alg/use/key_ops decide.
    static func jws(_ json: [String: Any], keySet: Bool) -> FileResult {
        var r = FileResult()
        for group in json["testGroups"] as? [[String: Any]] ?? [] {
            let keyObject = (group["public"] ?? group["private"]) as? [String: Any]
            var set: JWKSet?
            var keyAlgUnregistered = false
            let keyAlg = keySet ? nil : keyObject?["alg"] as? String
            if let keyObject {
                if keySet {
                    set = try? JWKSet(json: jsonText(keyObject))
                } else {
                    set = (try? JWK(json: jsonText(keyObject))).map { JWKSet(keys: [$0]) }
                    if let a = keyObject["alg"] as? String, JWSAlgorithm(rawValue: a) == nil,
                        keyObject["use"] as? String != "enc"
                    {
                        keyAlgUnregistered = true
                    }
                }
            }
            for t in group["tests"] as? [[String: Any]] ?? [] {
                let id = "tcId \(t["tcId"] ?? "?")"
                var expected = Expectation(t["result"] as? String)
                let token = t["jws"] as? String ?? jsonText(t["jws"] ?? "")
                let headerAlg = (try? CompactJWS(token))?.header.alg.rawValue
                if case .valid = expected {
                    // Policy 1: bytes outside base64url in a segment — a strict parser refuses.
                    if !token.utf8.allSatisfy({ c in Base64URLAlphabet.contains(c) || c == UInt8(ascii: ".") }) {
                        expected = .either
                        r.byPolicy += 1
                    } else if keyAlgUnregistered || (keyAlg != nil && headerAlg != nil && keyAlg != headerAlg) {
                        // Policy 2: a JWK `alg` must equal the JWS alg (RFC 7517 §4.4).
                        expected = .invalid
                        r.byPolicy += 1
                    }
                } else if case .invalid = expected, (t["comment"] as? String ?? "").contains("Padding"),
                    !token.contains("="), !(t["flags"] as? [String] ?? []).contains("ModifiedPadding")
                {
                    // Data note: a case labelled as a padding defect whose bytes carry no padding
                    // at all; the described defect is not in the token, so either outcome.
                    expected = .either
                    r.byPolicy += 1
                }
                var ok = false
                if let set, let jws = try? CompactJWS(token) {
                    ok = (try? JWSVerifier(keys: set, algorithms: allAlgorithms).verify(jws)) != nil
                }
                r.record(id, expected: expected, got: ok)
            }
        }
        return r
    }

    static let Base64URLAlphabet = Set(Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8))
}
