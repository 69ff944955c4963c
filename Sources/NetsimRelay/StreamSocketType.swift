#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// `socket(2)`'s type for a TCP socket closed on exec: `SOCK_STREAM` is an enum in Glibc (where
/// `SOCK_CLOEXEC` can be or'ed in) and an `Int32` elsewhere (no `SOCK_CLOEXEC`: Darwin).
let closeOnExecStreamSocketType: Int32 = {
    #if canImport(Glibc) || canImport(Musl)
    Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
    #else
    SOCK_STREAM
    #endif
}()
