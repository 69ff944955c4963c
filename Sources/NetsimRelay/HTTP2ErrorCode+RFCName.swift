import NIOHTTP2

extension HTTP2ErrorCode {
    /// The code as RFC 9113 §7 spells it (`INTERNAL_ERROR`), for event details and messages that
    /// people compare with a capture; NIO's own description reads `HTTP2ErrorCode<0x2 Internal Error>`.
    public var rfcName: String {
        switch self {
        case .noError: "NO_ERROR"
        case .protocolError: "PROTOCOL_ERROR"
        case .internalError: "INTERNAL_ERROR"
        case .flowControlError: "FLOW_CONTROL_ERROR"
        case .settingsTimeout: "SETTINGS_TIMEOUT"
        case .streamClosed: "STREAM_CLOSED"
        case .frameSizeError: "FRAME_SIZE_ERROR"
        case .refusedStream: "REFUSED_STREAM"
        case .cancel: "CANCEL"
        case .compressionError: "COMPRESSION_ERROR"
        case .connectError: "CONNECT_ERROR"
        case .enhanceYourCalm: "ENHANCE_YOUR_CALM"
        case .inadequateSecurity: "INADEQUATE_SECURITY"
        case .http11Required: "HTTP_1_1_REQUIRED"
        default: "error code 0x\(String(networkCode, radix: 16))"
        }
    }
}
