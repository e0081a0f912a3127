import ArgumentParser

extension Tokengate {
    /// Developer tools over the JOSE module, and the API key files' editor.
    static var toolCommands: [ParsableCommand.Type] {
        [JWTCommand.self, KeysCommand.self, DPoPCommand.self, APIKeysCommand.self]
    }
}
