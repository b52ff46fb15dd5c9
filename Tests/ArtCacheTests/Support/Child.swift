import ArtCacheCore
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A child process started with `posix_spawn`, for the tests that run the
/// built binaries. Not Foundation's `Process`: its `run()` on Linux
/// crashes now and then (a 256-byte over-read of a `dirent` in
/// `findMaximumOpenFromProcSelfFD`, swift-corelibs-foundation#5472, fixed
/// after Swift 6.3.1; it took a full run of this suite down once), and
/// nothing random may decide CI.
///
/// The child gets the pipes as stdout and stderr, no other descriptor of
/// this process (closefrom 3), and a clean signal state. A thread of its
/// own reaps it.
final class Child: Sendable {
    enum TerminationReason: Sendable { case exit, uncaughtSignal }

    let processIdentifier: pid_t
    /// The raw wait status once reaped.
    private let status = Locked<Int32?>(nil)
    private let exited = DispatchGroup()

    /// SIGPIPE ignored in this process, once (children inherit it).
    private static let ignoringSIGPIPE: Void = { signal(SIGPIPE, SIG_IGN) }()

    /// Starts `executable` with `arguments` (argv[1...]) and exactly `environment`.
    init(executable: String, arguments: [String], environment: [String: String], directory: String?,
         stdout: Pipe, stderr: Pipe) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, stdout.fileHandleForWriting.fileDescriptor, 1)
        posix_spawn_file_actions_adddup2(&actions, stderr.fileHandleForWriting.fileDescriptor, 2)
        guard Self.addClosefrom(&actions, 3) == 0 else { throw POSIXError(.ENOSYS) }
        if let directory, Self.addChdir(&actions, directory) != 0 { throw POSIXError(.ENOSYS) }
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for pointer in argv + envp { free(pointer) } }
        // A clean signal state: nothing blocked, every signal at its default
        // (a thread of Swift's pool may block some; a child would inherit
        // it), but SIGPIPE as this process has it (ignored): a test that
        // drops a child's stderr pipe must not kill the child with it.
        // Ignored here first: a child inherits an ignored signal, and this
        // process had it ignored only once something else (libcurl, NIO)
        // set it, so a test run alone killed its children at their first
        // log line to a dropped stderr.
        _ = Self.ignoringSIGPIPE
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t(), all = sigset_t()
        sigemptyset(&none)
        sigfillset(&all)
        sigdelset(&all, SIGPIPE)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var spawned: pid_t = 0
        let result = posix_spawn(&spawned, executable, &actions, &attributes, argv, envp)
        guard result == 0 else { throw POSIXError(POSIXErrorCode(rawValue: result) ?? .EIO) }
        let pid = spawned
        processIdentifier = pid
        // The parent's copies of the write ends: the child holds its own,
        // so the readers see the end of the output when the child exits.
        try? stdout.fileHandleForWriting.close()
        try? stderr.fileHandleForWriting.close()
        exited.enter()
        let (status, exited) = (self.status, self.exited)
        Thread.detachNewThread {
            var raw: Int32 = 0
            while waitpid(pid, &raw, 0) < 0, errno == EINTR {}
            status.withLock { $0 = raw }
            exited.leave()
        }
    }

    // glibc's (2.34+) spawn file actions that Swift's Glibc module does not
    // declare (they need _GNU_SOURCE): looked up once.
    private typealias AddClosefrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    private typealias AddChdir = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32
    private static let addClosefrom = unsafeBitCast(dlsym(UnsafeMutableRawPointer(bitPattern: 0),
                                                          "posix_spawn_file_actions_addclosefrom_np")!, to: AddClosefrom.self)
    private static let addChdir = unsafeBitCast(dlsym(UnsafeMutableRawPointer(bitPattern: 0),
                                                      "posix_spawn_file_actions_addchdir_np")!, to: AddChdir.self)

    var isRunning: Bool { status.withLock { $0 == nil } }

    /// Blocks until the child has exited (call it off Swift's cooperative pool).
    func waitUntilExit() { exited.wait() }

    /// SIGTERM.
    func terminate() { kill(processIdentifier, SIGTERM) }

    private var raw: Int32 { status.withLock { $0 } ?? 0 }

    var terminationReason: TerminationReason { raw & 0x7F == 0 ? .exit : .uncaughtSignal }

    /// The exit code, or the signal that ended the child (as `Process` says).
    var terminationStatus: Int32 { raw & 0x7F == 0 ? (raw >> 8) & 0xFF : raw & 0x7F }
}
