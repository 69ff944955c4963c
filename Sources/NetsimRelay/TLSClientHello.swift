import NIOCore

/// Reads the server name (SNI) from the start of a TLS ClientHello, for the event log: "broke
/// a TLS ClientHello for api.example.com". Never throws; anything unexpected gives nil.
enum TLSClientHello {
    static func serverName(in buffer: ByteBuffer) -> String? {
        var b = buffer
        // Record header: type 22 (handshake), version, length.
        guard b.readInteger(as: UInt8.self) == 0x16, b.readInteger(as: UInt16.self) != nil,
              b.readInteger(as: UInt16.self) != nil,
              // Handshake header: type 1 (ClientHello), 24-bit length; then version and random.
              b.readInteger(as: UInt8.self) == 0x01, b.readSlice(length: 3 + 2 + 32) != nil,
              let sessionLength = b.readInteger(as: UInt8.self), b.readSlice(length: Int(sessionLength)) != nil,
              let suitesLength = b.readInteger(as: UInt16.self), b.readSlice(length: Int(suitesLength)) != nil,
              let compressionLength = b.readInteger(as: UInt8.self), b.readSlice(length: Int(compressionLength)) != nil,
              let extensionsLength = b.readInteger(as: UInt16.self),
              var extensions = b.readSlice(length: min(Int(extensionsLength), b.readableBytes))
        else { return nil }
        while let type = extensions.readInteger(as: UInt16.self), let length = extensions.readInteger(as: UInt16.self),
              var body = extensions.readSlice(length: Int(length)) {
            guard type == 0 else { continue }  // server_name
            guard body.readInteger(as: UInt16.self) != nil else { return nil }
            while let nameType = body.readInteger(as: UInt8.self), let nameLength = body.readInteger(as: UInt16.self),
                  let name = body.readString(length: Int(nameLength)) {
                if nameType == 0 { return name.allSatisfy({ $0.isASCII && !$0.isWhitespace }) ? name : nil }
            }
            return nil
        }
        return nil
    }
}
