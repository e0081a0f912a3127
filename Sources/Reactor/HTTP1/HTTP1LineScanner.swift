/// Finds where one CRLF-terminated line ends, across input chunks of any size, copying the
/// line's bytes (without CRLF) to a buffer. It refuses the three bytes that make hops
/// disagree on line boundaries (RFC 9112 §2.2, RFC 9110 §5.5): a bare LF, a bare CR and NUL.
/// A line longer than a given bound is refused as soon as it passes the bound, so a peer
/// that never sends LF costs at most that many bytes.
struct HTTP1LineScanner: Sendable {
    /// The previous chunk ended on a CR whose LF has not arrived yet. The line has begun
    /// even when no byte of it was kept: whatever reads the next chunk must go through `scan`.
    private(set) var pendingCR = false

    init() {}

    /// Scans `input[start...]`, appending the current line's bytes to `line`. Returns the
    /// index just past the LF when the line is complete, or nil when every byte was taken
    /// and the line goes on. `lineStart` is where the line begins in `line`; a line whose
    /// length passes `maxLength` throws `tooLong` (its bytes so far are in `line`).
    mutating func scan(
        _ input: UnsafeRawBufferPointer, from start: Int, into line: inout [UInt8],
        lineStart: Int, maxLength: Int,
        tooLong: HTTP1ParseError.Code
    ) throws(HTTP1ParseError) -> Int? {
        let count = input.count
        if pendingCR {
            guard start < count else { return nil }
            guard input[start] == HTTP1Bytes.lf else { throw HTTP1ParseError(.bareCR) }
            pendingCR = false
            return start + 1
        }
        let budget = maxLength - (line.count - lineStart)
        var i = start
        while i < count {
            let b = input[i]
            if b <= HTTP1Bytes.cr {
                if b == HTTP1Bytes.cr {
                    append(input, start, i, to: &line)
                    guard i + 1 < count else {
                        pendingCR = true
                        return nil
                    }
                    guard input[i + 1] == HTTP1Bytes.lf else { throw HTTP1ParseError(.bareCR) }
                    return i + 2
                }
                if b == HTTP1Bytes.lf { throw HTTP1ParseError(.bareLF) }
                if b == 0 { throw HTTP1ParseError(.nul) }
            }
            i += 1
            if i - start > budget {
                append(input, start, i, to: &line)
                throw HTTP1ParseError(tooLong)
            }
        }
        append(input, start, count, to: &line)
        return nil
    }

    @inline(__always)
    private func append(_ input: UnsafeRawBufferPointer, _ from: Int, _ to: Int, to line: inout [UInt8]) {
        guard to > from else { return }
        // As typed bytes: Array appends those with one copy, a raw buffer element by element.
        UnsafeRawBufferPointer(rebasing: input[from..<to]).withMemoryRebound(to: UInt8.self) {
            line.append(contentsOf: $0)
        }
    }
}
