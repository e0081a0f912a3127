import Glibc

/// What `stat` says of a file: a new file (a rename, a symlink swap) or new bytes.
struct FileStamp: Equatable {
    var device: UInt64 = 0
    var inode: UInt64 = 0
    var size: Int64 = 0
    var modified: Int = 0
    var modifiedNanos: Int = 0

    init(path: String) {
        var st = stat()
        guard stat(path, &st) == 0 else { return }
        device = UInt64(st.st_dev)
        inode = UInt64(st.st_ino)
        size = Int64(st.st_size)
        modified = st.st_mtim.tv_sec
        modifiedNanos = st.st_mtim.tv_nsec
    }
}
