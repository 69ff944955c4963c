import NIOHTTP2
import NetsimScenario
import Testing

@testable import NetsimRunner

/// `resilient`'s retry rule, as a table: what may be sent again after which failure.
@Suite("resilient: what may be retried")
struct ResilientRetryTests {
    static func failure(_ kind: ErrorKind, beforeResponse: Bool = true, reset: HTTP2ErrorCode? = nil) -> ExchangeFailure {
        ExchangeFailure(kind: kind, message: "", beforeResponse: beforeResponse, streamReset: reset)
    }

    @Test("REFUSED_STREAM: any method (nothing was processed); other stream resets: idempotent only")
    func streamResets() {
        #expect(ResilientDriver.retryable(Self.failure(.reset, reset: .refusedStream), idempotent: false))
        #expect(ResilientDriver.retryable(Self.failure(.reset, reset: .refusedStream), idempotent: true))
        #expect(!ResilientDriver.retryable(Self.failure(.reset, reset: .internalError), idempotent: false))
        #expect(ResilientDriver.retryable(Self.failure(.reset, reset: .internalError), idempotent: true))
        #expect(!ResilientDriver.retryable(Self.failure(.reset, reset: .cancel), idempotent: false))
    }

    @Test("a dead connection: idempotent requests, before any response, after a reset or a close only")
    func connectionFailures() {
        #expect(ResilientDriver.retryable(Self.failure(.reset), idempotent: true))
        #expect(ResilientDriver.retryable(Self.failure(.closedBeforeResponse), idempotent: true))
        #expect(!ResilientDriver.retryable(Self.failure(.reset), idempotent: false), "a POST is never replayed")
        #expect(!ResilientDriver.retryable(Self.failure(.reset, beforeResponse: false), idempotent: true), "part of an answer came")
        #expect(!ResilientDriver.retryable(Self.failure(.timeout), idempotent: true), "the timeout is the budget")
        #expect(!ResilientDriver.retryable(Self.failure(.tls), idempotent: true), "a refused certificate stays refused")
    }
}
