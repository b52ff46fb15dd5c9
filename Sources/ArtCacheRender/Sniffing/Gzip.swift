import CZlib
import Foundation

/// Inflates at most `maxOutput` bytes from the start of a gzip stream.
///
/// Used by the sniffer to look inside `.svgz` bodies; it never inflates more
/// than it needs, so a gzip bomb costs at most `maxOutput` bytes.
/// Returns nil when the bytes are not a readable gzip stream.
func gunzipPrefix(_ data: Data, maxOutput: Int = 4096) -> Data? {
    guard data.count >= 18, data[data.startIndex] == 0x1F, data[data.startIndex + 1] == 0x8B else {
        return nil
    }
    var stream = z_stream()
    // 15 + 16: expect a gzip header.
    guard inflateInit2_(&stream, 15 + 16, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
        return nil
    }
    defer { inflateEnd(&stream) }
    var output = [UInt8](repeating: 0, count: maxOutput)
    let produced: Int? = data.withUnsafeBytes { (input: UnsafeRawBufferPointer) -> Int? in
        guard let base = input.bindMemory(to: Bytef.self).baseAddress else { return nil }
        stream.next_in = UnsafeMutablePointer(mutating: base)
        stream.avail_in = uInt(input.count)
        return output.withUnsafeMutableBufferPointer { out -> Int? in
            stream.next_out = out.baseAddress
            stream.avail_out = uInt(out.count)
            let status = inflate(&stream, Z_SYNC_FLUSH)
            let written = out.count - Int(stream.avail_out)
            // A truncated or corrupt stream may still have produced a readable prefix.
            if status == Z_OK || status == Z_STREAM_END || status == Z_BUF_ERROR || written > 0 {
                return written > 0 ? written : nil
            }
            return nil
        }
    }
    guard let produced else { return nil }
    return Data(output[0..<produced])
}

/// True when `data` is one whole gzip stream: it inflates to its end (the
/// trailer's CRC and length check out) within `maxOutput` bytes. A truncated,
/// corrupt or over-long stream is false. Inflates in 64 KiB steps into a
/// scratch buffer, so memory stays constant whatever the stream claims.
func gzipStreamIsComplete(_ data: Data, maxOutput: Int) -> Bool {
    guard data.count >= 18, data[data.startIndex] == 0x1F, data[data.startIndex + 1] == 0x8B else { return false }
    var stream = z_stream()
    guard inflateInit2_(&stream, 15 + 16, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else { return false }
    defer { inflateEnd(&stream) }
    var scratch = [UInt8](repeating: 0, count: 64 * 1024)
    return data.withUnsafeBytes { (input: UnsafeRawBufferPointer) -> Bool in
        guard let base = input.bindMemory(to: Bytef.self).baseAddress else { return false }
        stream.next_in = UnsafeMutablePointer(mutating: base)
        stream.avail_in = uInt(input.count)
        var total = 0
        return scratch.withUnsafeMutableBufferPointer { out -> Bool in
            while true {
                stream.next_out = out.baseAddress
                stream.avail_out = uInt(out.count)
                let status = inflate(&stream, Z_NO_FLUSH)
                total += out.count - Int(stream.avail_out)
                if total > maxOutput { return false }
                switch status {
                case Z_STREAM_END: return true
                case Z_OK: continue
                default: return false  // Z_BUF_ERROR: input ended mid-stream; others: corrupt
                }
            }
        }
    }
}
