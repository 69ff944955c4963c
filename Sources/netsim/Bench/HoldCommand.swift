import ArgumentParser
import NetsimCore
import NetsimLoopback

/// `netsim _hold` (hidden): accepts TCP connections and holds them open without reading, the
/// upstream of `netsim bench`'s rss part. Prints `netsim _hold: HOST:PORT` on standard error.
struct HoldCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "_hold",
        abstract: "Accept connections and hold them idle (a helper of `netsim bench`).",
        shouldDisplay: false)

    @Option(help: ArgumentHelp("Loopback address to listen on; port 0 picks a free port.", valueName: "host:port"), transform: parseEndpoint)
    var listen = Endpoint(host: "127.0.0.1", port: 0)

    @Option(help: ArgumentHelp("Exit after this long at the latest.", valueName: "duration"), transform: parseDuration)
    var duration: Duration = .seconds(600)

    func validate() throws {
        guard listen.isLoopback else { throw ValidationError("_hold listens on loopback addresses only") }
    }

    func run() async throws {
        let stop = StopSignal(command: "netsim _hold")
        // Hold mode: accepted sockets are kept (never read) until the server stops.
        let server: LoopbackServer
        do {
            server = try LoopbackServer(host: listen.host, port: listen.port, threadPerConnection: false) { _ in }
        } catch {
            throw RuntimeError("cannot listen on \(listen): \(error)")
        }
        printStatus("netsim _hold: \(server.endpoint)")
        await stop.wait(duration: duration)
        printStatus("netsim _hold: held \(server.acceptedCount) connections; stopping")
        server.stop()
    }
}
