import ArgumentParser

extension Tokengate {
    /// Developer tools from the JOSE module (`jwt`, `keys`).
    static var toolCommands: [ParsableCommand.Type] { [] }
}
