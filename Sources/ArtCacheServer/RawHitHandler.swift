import HTTPTypes
import NIOCore

/// Answers memory hits from the connection's bytes, in front of the HTTP/1
/// decoder: a keep-alive `GET` of an image path whose thumbnail is fresh in
/// memory is parsed here (request line and headers, nothing else), answered
/// with the bytes the router would send (the same decision:
/// ``ThumbnailService/memoryAnswer(path:accept:saveData:ifNoneMatch:)``, plus `Date`
/// and `Server` as Hummingbird adds them), and never reaches the decoder,
/// the HTTP types conversion, the response encoder or the router. On
/// artwork-sized hits those stages were most of a hit's CPU.
///
/// A request read whole here but not answered from memory (not an image
/// path, a path not fresh in memory, an invalid one) goes on to the decoder
/// alone, its bytes exactly (a `GET` without a body ends with its head), and
/// reading goes on after it: the hits behind it go on to the decoder too
/// while it (or any request passed on) is with the router — answered here
/// they would overtake it — and are answered here again once every answer
/// of the router has ended (``ConnectionGuard/passedOn``).
///
/// Anything else — another method or version, a body, `Connection: close`,
/// `Expect`, a header it does not read twice, a byte the decoder might judge
/// otherwise, a head over ``maxHead`` bytes, or a connection whose answers
/// are not being read (not writable) — hands the connection's bytes, from
/// that request on, to the decoder, and this handler steps aside for the
/// rest of the connection (it cannot know where the decoder's requests
/// end). So requests keep their order, and every refusal, error and limit
/// is the decoder's and the router's.
final class RawHitHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// The longest request head answered here (a browser's is under 1 KB).
    static let maxHead = 4096

    private let service: ThumbnailService
    /// Strong: the guard holds no reference back; the pipeline owns both.
    private let owner: ConnectionGuard
    /// Bytes of a request head not yet complete.
    private var pending: ByteBuffer?
    /// Stepped aside: every byte goes on to the decoder.
    private var passing = false
    private var answered = false
    /// A request was passed on whole during this read.
    private var passedOnInRead = false

    init(service: ThumbnailService, owner: ConnectionGuard) {
        self.service = service
        self.owner = owner
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !passing else {
            context.fireChannelRead(data)
            return
        }
        var buffer = unwrapInboundIn(data)
        if var held = pending {
            pending = nil
            held.writeBuffer(&buffer)
            buffer = held
        }
        while buffer.readableBytes > 0 {
            switch answer(&buffer, context: context) {
            case .answered:
                continue
            case .incomplete:
                pending = buffer
                return
            case .passedOn(let request):
                passedOnInRead = true
                context.fireChannelRead(wrapInboundOut(request))
            case .pass:
                passing = true
                settle(context, partLeft: true)  // this request's read goes on
                context.fireChannelRead(wrapInboundOut(buffer))
                return
            }
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        settle(context, partLeft: pending != nil)
        context.fireChannelReadComplete()
    }

    /// Sends the answers written during this read, and tells the guard
    /// what is left of it (`partLeft`: part of a request has come).
    private func settle(_ context: ChannelHandlerContext, partLeft: Bool) {
        guard answered || passedOnInRead else { return }
        if answered { context.flush() }
        answered = false
        passedOnInRead = false
        owner.answeredInPlace(partLeft: partLeft)
    }

    private enum Outcome {
        case answered, incomplete, pass
        /// One whole request (these bytes) for the decoder; reading goes on after it.
        case passedOn(ByteBuffer)
    }

    /// Answers the request at the buffer's reader index (moving past it),
    /// passes it on alone (moving past it), or says why not (the index unmoved).
    private func answer(_ buffer: inout ByteBuffer, context: ChannelHandlerContext) -> Outcome {
        // A client that sends requests and reads no answers fills the
        // channel's outbound buffer: past its high-water mark the rest is the
        // decoder's (the HTTP pipelining handler reads no further then).
        guard context.channel.isWritable else { return .pass }
        guard let head = RawRequestHead.parse(buffer, maxHead: Self.maxHead) else { return .pass }
        guard let parsed = head else { return .incomplete }
        let started = ContinuousClock.now
        guard owner.passedOn == 0, parsed.isImagePath,
              let prepared = service.memoryHit(path: parsed.path, accept: parsed.accept, saveData: parsed.saveData,
                                               ifNoneMatch: parsed.ifNoneMatch, started: started) else {
            owner.passingOn()
            return .passedOn(buffer.readSlice(length: parsed.length)!)
        }
        buffer.moveReaderIndex(forwardBy: parsed.length)
        if let head = prepared.head {
            // A kept hit: its head as built once, then the second's date.
            context.write(wrapOutboundOut(head), promise: nil)
        } else {
            context.write(wrapOutboundOut(prepared.serializedHead()), promise: nil)  // a 304, an answer not kept
        }
        context.write(wrapOutboundOut(ThumbnailService.dateHeader.line()), promise: nil)
        if let body = prepared.body, body.readableBytes > 0 { context.write(wrapOutboundOut(body), promise: nil) }
        answered = true
        service.metrics.stage(.answer, since: started)
        return .answered
    }
}

/// A `GET … HTTP/1.1` request head read from bytes, strictly: nil when it is
/// anything the decoder should judge.
struct RawRequestHead {
    var path: String
    var accept: String?
    var ifNoneMatch: String?
    /// `Save-Data`, as sent.
    var saveData: String?
    /// The head's length in bytes, its blank line included.
    var length: Int
    /// Whether `path` can name an image: three slashes and no query,
    /// `/{signature}/{options}/{source}` (only then is the memory tier
    /// asked). A loop over the bytes (`String.contains` of a string goes
    /// through Foundation's NSString search on Linux: 3% of a hit in a profile).
    var isImagePath: Bool {
        var slashes = 0
        for byte in path.utf8 {
            if byte == UInt8(ascii: "?") { return false }
            if byte == UInt8(ascii: "/") { slashes += 1 }
        }
        return slashes == 3
    }

    // The literals a head is compared with, made once (not an array per request).
    private static let getPrefix = Array("GET /".utf8)
    private static let versionSuffix = Array(" HTTP/1.1\r\n".utf8)
    private static let keepAlive = Array("keep-alive".utf8)

    /// `.some(nil)`: not complete yet; nil: not one to answer here.
    static func parse(_ buffer: ByteBuffer, maxHead: Int) -> RawRequestHead?? {
        buffer.withUnsafeReadableBytes { bytes -> RawRequestHead?? in
            let count = bytes.count
            // "GET /" at least: anything else is the decoder's.
            let get = Self.getPrefix
            for (index, byte) in get.enumerated() where index < count {
                if bytes[index] != byte { return nil }
            }
            if count < get.count { return .some(nil) }
            // The request target: visible ASCII up to one space.
            var index = 4
            while index < count, bytes[index] != 0x20 {
                guard bytes[index] > 0x20, bytes[index] < 0x7F else { return nil }
                index += 1
            }
            let version = Self.versionSuffix
            for (offset, byte) in version.enumerated() {
                guard index + offset < count else { return count > maxHead ? nil : .some(nil) }
                if bytes[index + offset] != byte { return nil }
            }
            let path = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[4..<index]), as: UTF8.self)
            index += version.count
            guard index <= maxHead else { return nil }
            var head = RawRequestHead(path: path, length: 0)
            var seen = 0  // bit per header read
            while true {
                guard index + 1 < count else { return count > maxHead ? nil : .some(nil) }
                if bytes[index] == 0x0D {
                    guard bytes[index + 1] == 0x0A else { return nil }
                    head.length = index + 2
                    return head
                }
                // name ":" OWS value OWS CRLF
                let nameStart = index
                while index < count, bytes[index] != UInt8(ascii: ":") {
                    guard Self.isTokenByte(bytes[index]) else { return nil }
                    index += 1
                }
                guard index < count else { return count > maxHead ? nil : .some(nil) }
                let nameEnd = index
                guard nameEnd > nameStart else { return nil }
                index += 1
                var valueStart = index
                while index < count, bytes[index] != 0x0D {
                    let byte = bytes[index]
                    guard byte == 0x09 || (byte >= 0x20 && byte != 0x7F) else { return nil }
                    index += 1
                }
                guard index + 1 < count else { return count > maxHead ? nil : .some(nil) }
                guard bytes[index + 1] == 0x0A else { return nil }
                var valueEnd = index
                while valueStart < valueEnd, bytes[valueStart] == 0x20 || bytes[valueStart] == 0x09 { valueStart += 1 }
                while valueEnd > valueStart, bytes[valueEnd - 1] == 0x20 || bytes[valueEnd - 1] == 0x09 { valueEnd -= 1 }
                index += 2
                guard index <= maxHead else { return nil }
                let name = UnsafeRawBufferPointer(rebasing: bytes[nameStart..<nameEnd])
                let value = { String(decoding: UnsafeRawBufferPointer(rebasing: bytes[valueStart..<valueEnd]), as: UTF8.self) }
                switch Self.known(name) {
                case .accept:
                    guard seen & 1 == 0 else { return nil }
                    seen |= 1
                    head.accept = value()
                case .ifNoneMatch:
                    guard seen & 2 == 0 else { return nil }
                    seen |= 2
                    head.ifNoneMatch = value()
                case .saveData:
                    guard seen & 8 == 0 else { return nil }
                    seen |= 8
                    head.saveData = value()
                case .connection:
                    // Browsers say keep-alive; anything else is the decoder's.
                    guard seen & 4 == 0, Self.isKeepAlive(UnsafeRawBufferPointer(rebasing: bytes[valueStart..<valueEnd])) else { return nil }
                    seen |= 4
                case .refused:
                    return nil
                case .other:
                    break
                }
            }
        }
    }

    private enum Known { case accept, ifNoneMatch, saveData, connection, refused, other }

    /// Headers read here, headers that send the request to the decoder
    /// (a body, a connection option, an expectation, an upgrade), others.
    private static func known(_ name: UnsafeRawBufferPointer) -> Known {
        func equals(_ literal: StaticString) -> Bool {
            guard name.count == literal.utf8CodeUnitCount else { return false }
            let pointer = literal.utf8Start
            for index in 0..<name.count {
                var byte = name[index]
                if byte >= 0x41, byte <= 0x5A { byte |= 0x20 }
                if byte != pointer[index] { return false }
            }
            return true
        }
        switch name.count {
        case 6: return equals("accept") ? .accept : equals("expect") ? .refused : .other
        case 7: return equals("upgrade") ? .refused : .other
        case 9: return equals("save-data") ? .saveData : .other
        case 10: return equals("connection") ? .connection : .other
        case 13: return equals("if-none-match") ? .ifNoneMatch : .other
        case 14: return equals("content-length") ? .refused : .other
        case 17: return equals("transfer-encoding") ? .refused : .other
        default: return .other
        }
    }

    private static func isKeepAlive(_ value: UnsafeRawBufferPointer) -> Bool {
        let expected = Self.keepAlive
        guard value.count == expected.count else { return false }
        for index in 0..<value.count where value[index] | 0x20 != expected[index] { return false }
        return true
    }

    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }
}
