import ArgumentParser

extension Tokengate {
    /// Developer tools over the JOSE module.
    static var toolCommands: [ParsableCommand.Type] { [JWTCommand.self, KeysCommand.self, DPoPCommand.self] }
}
