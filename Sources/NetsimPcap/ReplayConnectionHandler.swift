#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import NIOCore
import NetsimRelay
import NetsimCore

/// One replay connection: reads requests (or a raw conversation's client turns) and writes the
/// captured answers, one at a time and in order, with the captured timing when asked.
///
/// Only ever touched on its channel's event loop (hence `@unchecked Sendable` for the
/// scheduled tasks that call back into it).
final class ReplayConnectionHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// Without timing, a server close that followed its answer within this long is replayed at
    /// once; later (idle) closes only with timing, where they happen after the scaled delay.
    static let promptClose: Int64 = 1_000_000_000

    private struct Job: Sendable {
        var delay: Int64
        var bytes: [UInt8]
        var pacing: [(offset: Int, delay: Int64)]
        var close: ServerClose?
        /// The answer ends when the connection does (no length): close after it, whatever the timing.
        var mustClose: Bool
    }

    private enum Mode {
        case undecided, http, done
        case raw(ReplayPlan.RawConversation, turn: Int, remaining: Int)
    }

    private let book: ReplayBook
    private let timing: ReplayTiming
    private let connection: Int
    private var context: ChannelHandlerContext?
    private var pending: [UInt8] = []
    private var mode = Mode.undecided
    private var jobs: [Job] = []
    private var busy = false
    private var inputClosed = false
    private var closing = false
    private var idleClose: Scheduled<Void>?
    private var requests = 0
    /// The answer chosen when a request's head came in before its body (so its captured
    /// `100 Continue` could go out); the whole request takes it.
    private var chosen: CapturedExchange??

    init(book: ReplayBook, timing: ReplayTiming, connection: Int) {
        self.book = book
        self.timing = timing
        self.connection = connection
    }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    func channelActive(context: ChannelHandlerContext) {
        if !book.hasHTTP, let conversation = book.nextRawConversation() {
            startRaw(conversation)
        }
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        if let bytes = buffer.readBytes(length: buffer.readableBytes) { pending += bytes }
        process()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, event == .inputClosed {
            inputClosed = true
            if !busy, jobs.isEmpty { close(.fin) }
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        idleClose?.cancel()
        closing = true
        book.closed(connection)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    // MARK: Reading

    private func process() {
        if case .undecided = mode {
            guard !pending.isEmpty else { return }
            if book.hasHTTP, HTTPFraming.looksLikeRequest(pending[...]) || !book.hasRaw {
                mode = .http
            } else if let conversation = book.nextRawConversation() {
                startRaw(conversation)
            }
        }
        switch mode {
        case .http: readRequests()
        case .raw: advanceRaw()
        case .undecided, .done: pending.removeAll()
        }
    }

    private func readRequests() {
        while !pending.isEmpty {
            let (method, target, result) = HTTPFraming.request(pending[...])
            switch result {
            case .needMore:
                answerEarly(method, target)
                return
            case .invalid(let reason):
                mode = .done
                pending.removeAll()
                let body = Array("netsim replay: cannot read the request: \(reason)\n".utf8)
                enqueue(Job(delay: 0, bytes: Self.plainResponse(400, "Bad Request", body), pacing: [], close: nil, mustClose: true))
                return
            case .message(let message):
                pending.removeFirst(message.length)
                let ends = message.head.endsConnection
                answer(method, target, range: message.head.field("Range"), bodyBytes: message.length - message.head.length, ends: ends)
                if ends {
                    // The last request on this connection: what follows it is not answered.
                    mode = .done
                    pending.removeAll()
                    return
                }
            }
        }
    }

    /// A request's head is in and its body is not: a client that sent `Expect: 100-continue`
    /// waits for the captured `100 Continue` (or its own timeout, about a second) before it
    /// sends the body, so the answer is chosen now and its early part sent.
    private func answerEarly(_ method: String, _ target: String) {
        guard chosen == nil, let head = HTTPFraming.head(pending[...]),
              head.field("Expect")?.lowercased() == "100-continue" else { return }
        let exchange = book.answer(method: method, target: target, range: head.field("Range"))
        chosen = .some(exchange)
        guard let exchange, exchange.earlyAnswer > 0 else { return }
        enqueue(Job(delay: 0, bytes: Array(exchange.response.prefix(exchange.earlyAnswer)), pacing: [], close: nil, mustClose: false))
    }

    /// `ends`: the client asked to close after this answer (QA 68: a read-to-end client waited
    /// for a close that never came, the captured answer saying keep-alive).
    private func answer(_ method: String, _ target: String, range: String?, bodyBytes: Int, ends: Bool) {
        idleClose?.cancel()
        idleClose = nil
        let early = chosen
        chosen = nil
        let exchange = early ?? book.answer(method: method, target: target, range: range)
        book.record(method, target, exchange: exchange, bodyBytes: bodyBytes, connection: connection, reused: requests > 0)
        requests += 1
        guard let exchange else {
            let body = Array("netsim replay: the capture has no answer for \(method) \(target)\n".utf8)
            enqueue(Job(delay: 0, bytes: Self.plainResponse(404, "Not Found", body), pacing: [], close: nil, mustClose: ends))
            return
        }
        // What went out early is not sent again; the rest keeps its captured pacing. Bytes the
        // capture never had are not made up: the answer stops before them with a reset.
        let sent = early == nil ? 0 : exchange.earlyAnswer
        let end = max(sent, exchange.uncapturedFrom ?? exchange.response.count)
        let pacing = exchange.pacing.filter { $0.offset >= sent && $0.offset < end }
        let cut = end < exchange.response.count
        enqueue(Job(
            delay: exchange.thinkTime, bytes: Array(exchange.response[sent..<end]),
            pacing: pacing.map { ($0.offset - sent, $0.delay - (pacing.first?.delay ?? 0)) },
            close: cut ? ServerClose(kind: .rst, after: 0) : exchange.serverClose, mustClose: cut || exchange.responseEndsAtClose || ends))
    }

    private func startRaw(_ conversation: ReplayPlan.RawConversation) {
        let first = conversation.turns.first
        mode = .raw(conversation, turn: 0, remaining: first?.fromClient == true ? first!.bytes.count : 0)
        advanceRaw()
    }

    /// Counts the client's bytes against its captured turns; each completed client turn
    /// releases the server turn that followed it.
    private func advanceRaw() {
        guard case .raw(let conversation, var turn, var remaining) = mode else { return }
        let turns = conversation.turns
        while turn < turns.count {
            if turns[turn].fromClient {
                let taken = min(remaining, pending.count)
                remaining -= taken
                pending.removeFirst(taken)
                if remaining > 0 { break }
            } else {
                let previousEnd = turn > 0 ? turns[turn - 1].end : turns[turn].start
                enqueue(Job(delay: turns[turn].start - previousEnd, bytes: turns[turn].bytes, pacing: [], close: nil, mustClose: false))
            }
            turn += 1
            if turn < turns.count, turns[turn].fromClient { remaining = turns[turn].bytes.count }
        }
        if turn >= turns.count {
            mode = .done
            pending.removeAll()
            if let close = conversation.serverClose {
                enqueue(Job(delay: 0, bytes: [], pacing: [], close: close, mustClose: false))
            }
        } else {
            mode = .raw(conversation, turn: turn, remaining: remaining)
        }
    }

    // MARK: Writing

    private func enqueue(_ job: Job) {
        jobs.append(job)
        runNext()
    }

    private func runNext() {
        guard !busy, !closing, let context else { return }
        guard !jobs.isEmpty else {
            if inputClosed { close(.fin) }
            return
        }
        let job = jobs.removeFirst()
        busy = true
        var pieces = timing.speed == nil || job.pacing.isEmpty ? [(offset: 0, delay: Int64(0))] : job.pacing
        pieces[0].offset = 0
        let plan = pieces
        after(timing.scaled(job.delay), on: context) { [self] in write(job, pieces: plan, index: 0) }
    }

    /// Writes piece `index` of the answer, then schedules the next at its captured offset.
    private func write(_ job: Job, pieces: [(offset: Int, delay: Int64)], index: Int) {
        guard let context, !closing else { return }
        let end = index + 1 < pieces.count ? pieces[index + 1].offset : job.bytes.count
        let start = min(pieces[index].offset, end)
        let promise = context.eventLoop.makePromise(of: Void.self)
        if start < end {
            var buffer = context.channel.allocator.buffer(capacity: end - start)
            buffer.writeBytes(job.bytes[start..<end])
            context.writeAndFlush(wrapOutboundOut(buffer), promise: promise)
        } else {
            promise.succeed()
        }
        if index + 1 < pieces.count {
            let wait = timing.scaled(pieces[index + 1].delay - pieces[index].delay)
            after(wait, on: context) { [self] in write(job, pieces: pieces, index: index + 1) }
            return
        }
        promise.futureResult.whenComplete { [self] _ in finished(job) }
    }

    private func finished(_ job: Job) {
        busy = false
        if job.mustClose {
            close(job.close?.kind ?? .fin)
            return
        }
        if let close = job.close, let context {
            if timing.speed != nil {
                idleClose = context.eventLoop.scheduleTask(in: .nanoseconds(timing.scaled(close.after))) { [self] in
                    if !busy, jobs.isEmpty { self.close(close.kind) }
                }
            } else if close.after <= Self.promptClose {
                self.close(close.kind)
                return
            }
        }
        runNext()
    }

    private func after(_ nanoseconds: Int64, on context: ChannelHandlerContext, _ body: @escaping @Sendable () -> Void) {
        if nanoseconds <= 0 {
            body()
        } else {
            context.eventLoop.scheduleTask(in: .nanoseconds(nanoseconds)) { body() }
        }
    }

    /// FIN: a plain close. RST: SO_LINGER with a zero timeout, as a server that aborts does, once
    /// the client has everything written before it (``SendQueue``), as in the capture.
    private func close(_ kind: CloseKind) {
        guard !closing, let context else { return }
        closing = true
        let channel = context.channel
        if kind == .rst {
            SendQueue.reset(channel)
        } else {
            channel.close(promise: nil)
        }
    }

    static func plainResponse(_ status: Int, _ reason: String, _ body: [UInt8]) -> [UInt8] {
        Array("HTTP/1.1 \(status) \(reason)\r\nContent-Type: text/plain\r\nContent-Length: \(body.count)\r\n\r\n".utf8) + body
    }
}
