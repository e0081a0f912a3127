import ArgumentParser
import Foundation
import Gateway
import JOSE

/// `tokengate api-keys create|list|revoke|rotate --file F`: a key set's file, which holds
/// digests only. `create` and `rotate` print the new key once, on standard output; nothing
/// else ever shows it. The file is replaced whole (written beside it, then renamed), so a
/// gateway reading it on change never sees half of it.
struct APIKeysCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "api-keys", abstract: "Create, list, revoke and rotate API keys in a key file.",
        subcommands: [Create.self, List.self, Revoke.self, Rotate.self])

    struct FileOption: ParsableArguments {
        @Option(help: "The key file (api_keys.<set>.file).") var file: String
    }

    struct Create: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Make a key, add its entry, print the key once.")
        @OptionGroup var options: FileOption
        @Option(help: "The caller's identity (the sub claim).") var sub: String
        @Option(name: .customLong("client-id"), help: "The caller's client_id.") var clientID: String?
        @Option(help: "Scopes, comma-separated.") var scopes: String?
        @Option(help: "Another claim, name=value (repeatable; a repeated name makes a list).") var claim: [String] = []
        @Option(help: "When it expires: RFC 3339, or a duration from now (90d, 12h, 30m, 45s).") var expires: String?
        @Option(name: .customLong("not-before"), help: "When it starts to pass (RFC 3339 or a duration from now).")
        var notBefore: String?
        @Option(help: "Its public id (default: k_ and 8 random characters).") var id: String?

        func run() throws {
            var values: [(String, [String])] = []
            for pair in claim {
                guard let eq = pair.firstIndex(of: "="), eq != pair.startIndex else {
                    throw ValidationError("--claim takes name=value, not \(pair)")
                }
                let name = String(pair[..<eq])
                let value = String(pair[pair.index(after: eq)...])
                if let i = values.firstIndex(where: { $0.0 == name }) {
                    values[i].1.append(value)
                } else {
                    values.append((name, [value]))
                }
            }
            // A name given once is a string; given more than once, a list.
            let claims = values.map { name, all in
                (name, all.count == 1 ? JSONValue.string(all[0]) : .array(all.map(JSONValue.string)))
            }
            let identity = APIKeyEditing.Identity(
                sub: sub, clientID: clientID,
                scopes: scopes.map { $0.split(separator: ",").map(String.init) } ?? [], claims: claims)
            let entries = try KeyFileIO.read(options.file, missingIsEmpty: true)
            let made = try KeyFileIO.edit {
                try APIKeyEditing.create(
                    identity, id: id, expires: try expires.map(KeyFileIO.time),
                    notBefore: try notBefore.map(KeyFileIO.time),
                    in: entries)
            }
            try KeyFileIO.write(made.entries, to: options.file)
            FileHandle.standardError.write(Data("added \(made.entries.last!.id) to \(options.file); the key:\n".utf8))
            print(made.key)
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the keys by id (never a digest).")
        @OptionGroup var options: FileOption

        func run() throws {
            for e in try KeyFileIO.read(options.file, missingIsEmpty: false) {
                var line = "\(e.id)\tsub=\(e.sub)"
                if let c = e.clientID { line += "\tclient_id=\(c)" }
                if !e.scopes.isEmpty { line += "\tscopes=\(e.scopes.joined(separator: ","))" }
                if let t = e.notBefore { line += "\tnot_before=\(KeyFileIO.text(t))" }
                line += "\texpires=\(e.expires.map(KeyFileIO.text) ?? "never")"
                print(line)
            }
        }
    }

    struct Revoke: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove a key's entry: it fails from the next load.")
        @OptionGroup var options: FileOption
        @Argument(help: "The key's id.") var id: String

        func run() throws {
            let entries = try KeyFileIO.read(options.file, missingIsEmpty: false)
            try KeyFileIO.write(try KeyFileIO.edit { try APIKeyEditing.revoke(id, in: entries) }, to: options.file)
            FileHandle.standardError.write(Data("revoked \(id) in \(options.file)\n".utf8))
        }
    }

    struct Rotate: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "A new key with the old one's identity; the old one expires after the overlap.")
        @OptionGroup var options: FileOption
        @Argument(help: "The old key's id.") var id: String
        @Option(help: "How long the old key still passes (RFC 3339, or a duration from now).") var overlap: String =
            "24h"
        @Option(help: "When the new key expires (RFC 3339, or a duration from now).") var expires: String?

        func run() throws {
            let entries = try KeyFileIO.read(options.file, missingIsEmpty: false)
            let oldExpires = try KeyFileIO.time(overlap)
            let newExpires = try expires.map(KeyFileIO.time)
            let made = try KeyFileIO.edit {
                try APIKeyEditing.rotate(id, oldExpires: oldExpires, newExpires: newExpires, in: entries)
            }
            try KeyFileIO.write(made.entries, to: options.file)
            FileHandle.standardError.write(
                Data("added \(made.id) beside \(id), which expires \(KeyFileIO.text(oldExpires)); the key:\n".utf8))
            print(made.key)
        }
    }
}

/// A failure reading, editing or writing the file: said without the usage text.
struct KeyFileError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Reading and writing the key file for the command.
enum KeyFileIO {
    static func read(_ path: String, missingIsEmpty: Bool) throws -> [APIKeyEntry] {
        guard FileManager.default.fileExists(atPath: path) else {
            if missingIsEmpty { return [] }
            throw KeyFileError("\(path) does not exist")
        }
        let text = try String(contentsOfFile: path, encoding: .utf8)
        switch APIKeyFile.parse(text) {
        case .success(let entries): return entries
        case .failure(let problems):
            throw KeyFileError("\(path) has problems:\n" + problems.all.map { "  \($0)" }.joined(separator: "\n"))
        }
    }

    static func edit<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch let failure as APIKeyEditing.Failure {
            throw KeyFileError(failure.description)
        }
    }

    /// The whole file, written beside it and renamed over it.
    static func write(_ entries: [APIKeyEntry], to path: String) throws {
        let temporary = path + ".tmp-\(getpid())"
        guard
            FileManager.default.createFile(
                atPath: temporary, contents: Data(APIKeyFile.render(entries).utf8),
                attributes: [.posixPermissions: 0o600])
        else { throw KeyFileError("cannot write \(temporary)") }
        guard rename(temporary, path) == 0 else {
            unlink(temporary)
            throw KeyFileError("cannot replace \(path): \(String(cString: strerror(errno)))")
        }
    }

    /// RFC 3339, or a duration from now: a number and d, h, m or s.
    static func time(_ text: String) throws -> Int64 {
        if let t = APIKeyFile.time(text) { return t }
        let units: [Character: Int64] = ["d": 86_400, "h": 3_600, "m": 60, "s": 1]
        guard let unit = text.last, let scale = units[unit], let n = Int64(text.dropLast()), n >= 0,
            n <= 3_650 * 86_400 / scale
        else { throw ValidationError("\(text) is neither an RFC 3339 time nor a duration such as 90d") }
        return Int64(Date().timeIntervalSince1970) + n * scale
    }

    static func text(_ seconds: Int64) -> String { APIKeyFile.text(seconds) }
}
