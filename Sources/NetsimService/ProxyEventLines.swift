import NetsimCore

/// One proxy's events into the file every proxy of a ``ToxiproxyAPI`` shares (`netsim serve
/// --events`): each line names its proxy (connection ids are the API's, one numbering for all).
final class ProxyEventLines: EventSink {
    private let proxy: String
    private let lines: JSONLinesEventSink

    init(proxy: String, lines: JSONLinesEventSink) {
        self.proxy = proxy
        self.lines = lines
    }

    func receive(_ event: Event) {
        lines.receive(line: event.jsonLine(proxy: proxy))
    }

    func flush() {
        lines.flush()
    }
}
