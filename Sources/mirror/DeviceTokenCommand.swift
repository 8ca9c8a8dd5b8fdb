import ArgumentParser

/// `mirror device-token`: the device tokens `serve --device-tokens` reads.
struct DeviceTokenCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "device-token",
        abstract: "Manage the device tokens of serve --device-tokens.",
        subcommands: [DeviceTokenAddCommand.self])
}
