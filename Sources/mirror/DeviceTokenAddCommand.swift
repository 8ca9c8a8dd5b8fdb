import ArgumentParser
import MirrorCore
import MirrorServe

/// `mirror device-token add NAME --account A --table T --device-tokens FILE`.
struct DeviceTokenAddCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add",
        abstract: "Make a device token, print it once, and append its SHA-256 to the token file.",
        discussion: """
            The token is printed to stdout and stored nowhere: the file keeps its SHA-256, \
            with the name, accounts and tables it may read ('*': every one). A running serve \
            reads the file again on SIGHUP. To revoke a token, delete its line and send SIGHUP.
            """)

    @Argument(help: "A name for the device, shown in logs (kiosk-3).") var name: String
    @Option(name: .customLong("account"), help: "An account the device may read (repeat for more; '*': every one).")
    var accounts: [String] = []
    @Option(name: .customLong("table"), help: "A table the device may read (repeat for more; '*': every one).")
    var tables: [String] = []
    @Option(name: .customLong("device-tokens"), help: "The token file (made, readable by its owner alone, if missing).")
    var file: String

    func validate() throws {
        guard !name.isEmpty, !name.contains(where: \.isNewline) else { throw ValidationError("NAME must be a name on one line, such as kiosk-3") }
        for (option, names) in [("--account", accounts), ("--table", tables)] {
            guard !names.isEmpty else {
                throw ValidationError("\(option) is missing: name what the device may read, or '*' for every one")
            }
            guard names == ["*"] || !names.contains("*") else {
                throw ValidationError("\(option) '*' names every one: give it alone")
            }
        }
    }

    func run() throws {
        do {
            print(try DeviceTokens.add(name: name, accounts: accounts, tables: tables, to: file))
        } catch {
            throw UsageError(error.description)
        }
    }
}
