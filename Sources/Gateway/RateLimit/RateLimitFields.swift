import RawStructuredFieldValues

/// `RateLimit-Policy` and `RateLimit` as draft-ietf-httpapi-ratelimit-headers-11 writes them:
/// Structured Field lists (RFC 9651) whose items are the policy's name, with its quota and
/// window (`"per-user";q=10;w=1`) or what is left of it and when it is whole again
/// (`"per-user";r=3;t=1`). They say the policy's name and numbers only: never the key, and
/// only the caller's own budget.
enum RateLimitFields {
    /// The fields for `policy`'s decision on this request.
    static func fields(_ policy: RateLimitPolicy, rule: RateLimitRule, _ decision: GCRA.Decision) -> [(String, String)]
    {
        var out: [(String, String)] = []
        append(policy, rule: rule, decision, to: &out)
        return out
    }

    /// `fields`, appended to an answer's fields in place (no list of their own made).
    static func append(
        _ policy: RateLimitPolicy, rule: RateLimitRule, _ decision: GCRA.Decision, to fields: inout [(String, String)]
    ) {
        let reset = decision.allowed ? seconds(decision.reset) : retryAfter(decision)
        fields.reserveCapacity(fields.count + 2)
        fields.append(("RateLimit-Policy", policy.policyField(rule)))
        fields.append(("RateLimit", rateLimitField(policy.nameItem, remaining: decision.remaining, reset: reset)))
    }

    /// `RateLimit`'s value: the name's item, serialized once, with `r` and `t` appended as
    /// parameters (RFC 9651 §4.1.1.2); an integer's serialization is its decimal digits
    /// (§4.1.4). Written into the string's own storage: this is on every answer of a limited
    /// route, where interpolation cost four appends and two `description`s.
    static func rateLimitField(_ nameItem: String, remaining: Int, reset: Int) -> String {
        var name = nameItem
        return name.withUTF8 { item in
            // ";r=" and ";t=", each with at most 20 digits and a sign.
            String(unsafeUninitializedCapacity: item.count + 2 * 24) { out in
                var at = 0
                for b in item {
                    out[at] = b
                    at += 1
                }
                func parameter(_ key: UInt8, _ value: Int) {
                    out[at] = UInt8(ascii: ";")
                    out[at + 1] = key
                    out[at + 2] = UInt8(ascii: "=")
                    at += 3
                    if value < 0 {
                        out[at] = UInt8(ascii: "-")
                        at += 1
                    }
                    var v = value.magnitude
                    let first = at
                    repeat {
                        out[at] = UInt8(ascii: "0") + UInt8(v % 10)
                        v /= 10
                        at += 1
                    } while v > 0
                    out[first..<at].reverse()
                }
                parameter(UInt8(ascii: "r"), remaining)
                parameter(UInt8(ascii: "t"), reset)
                return at
            }
        }
    }

    /// Whole seconds to wait, at least 1 (RFC 9110 §10.2.3): the same moment as `t` on a 429.
    static func retryAfter(_ decision: GCRA.Decision) -> Int { max(1, seconds(decision.retryAfter)) }

    /// Microseconds, rounded up to seconds.
    static func seconds(_ micros: Int64) -> Int { Int((max(0, micros) + 999_999) / 1_000_000) }

    /// A list of one item, the policy's name, with integer parameters.
    static func list(_ name: String, _ parameters: [(String, Int)]) -> String {
        var params = OrderedMap<String, BareItem>()
        for (key, value) in parameters { params[key] = .integer(value) }
        var serializer = StructuredFieldValueSerializer()
        let item = ItemOrInnerList.item(Item(bareItem: .string(name), parameters: params))
        // A policy name is checked at load (printable ASCII, no quotes or backslashes): the
        // serializer cannot fail on it.
        guard let bytes = try? serializer.writeListFieldValue([item]) else { return "" }
        return String(decoding: bytes, as: UTF8.self)
    }
}

extension RateLimitPolicy {
    /// `RateLimit-Policy` for the rule a caller is under: its own policy's, made once.
    func policyField(_ rule: RateLimitRule) -> String {
        rule == limit ? limitField : RateLimitFields.list(name, [("q", rule.rate.count), ("w", rule.rate.seconds)])
    }
}
