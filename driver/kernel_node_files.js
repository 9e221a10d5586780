  // ---- kernel_node_files.js: put in kernel_node.js's closure where it says
  // "@include kernel_node_files.js" (kernel_node.py's _node_source_fd).
  //
  // The file ops, put, get, files and remove, run between snippets with the
  // code's own rights (ptybox-protocol(7), FILES): what kernel_files.py does
  // for Python, with its semantics and errors, in fs.
  // - Relative paths are from the folder the kernel started in (a snippet's
  //   process.chdir does not move it); "." parts and doubled slashes go, ".."
  //   stays for the filesystem (links and all).
  // - Paths go to fs as bytes: a name that is not UTF-8 comes out of a listing
  //   with each bad byte as a lone surrogate U+DC80-U+DCFF (Python's
  //   surrogateescape) and goes back in as that byte.
  // - A put writes a temporary file beside its target (O_EXCL, 0600) and
  //   renames it into place: atomic, and nothing half-written is left
  //   whatever fails (ENOSPC too).  Its data comes on the request pipe after
  //   its X line ("D<len>\n" + bytes, or "A\n": dropped), read by onData: the
  //   put's reply goes once all of it came (the relay sends nothing else
  //   meanwhile).  A chunked upload ("more") keeps its file open, keyed by a
  //   random token, until the put without "more" or with "abort", at most
  //   FILE_IDLE seconds unused and FILE_UPLOADS of them.
  // - A get sends "D<seq> <len>\n" + bytes on the message pipe (FILE_CHUNK at
  //   most each), up to the size the file had at its open: a growing file
  //   ends, a FIFO or a device or a folder is refused, never read.
  const FILE_CHUNK = 1 << 20; // bytes of a get's data message, at most
  const FILE_LIST_CAP = 10000; // entries of a folder listing ...
  const FILE_WALK_CAP = 100000; // ... and of a recursive one
  const FILE_LIST_BYTES = 12 << 20; // bytes of a listing's message, about: past it, "cut"
  const FILE_PATH_MAX = 4096; // bytes of a path
  const FILE_UPLOADS = 64; // unfinished uploads kept, at most (the oldest dropped)
  const FILE_IDLE = 600e3; // ms an unfinished upload is kept unused, at most
  const S_IFMT = 0o170000;
  const FILE_TYPES = new Map([[0o040000, 'dir'], [0o100000, 'file'], [0o120000, 'link'],
                              [0o010000, 'fifo'], [0o140000, 'socket'], [0o020000, 'char'],
                              [0o060000, 'block']]);
  const KIND_NAMES = { dir: 'folder', char: 'character device', block: 'block device' };
  // glibc's strerror (what Python's kernel says), where libuv's words differ.
  const STRERROR = {
    ENOENT: 'No such file or directory', ENOTDIR: 'Not a directory', EISDIR: 'Is a directory',
    ENOSPC: 'No space left on device', EACCES: 'Permission denied', EPERM: 'Operation not permitted',
    EROFS: 'Read-only file system', EEXIST: 'File exists', ENOTEMPTY: 'Directory not empty',
    ENAMETOOLONG: 'File name too long', ELOOP: 'Too many levels of symbolic links',
    EMFILE: 'Too many open files', ENFILE: 'Too many open files in system',
    EFBIG: 'File too large', EDQUOT: 'Disk quota exceeded', EBUSY: 'Device or resource busy',
    ETXTBSY: 'Text file busy', EINVAL: 'Invalid argument', EIO: 'Input/output error',
    EXDEV: 'Invalid cross-device link', EMLINK: 'Too many links', EBADF: 'Bad file descriptor',
    ENXIO: 'No such device or address', EAGAIN: 'Resource temporarily unavailable',
    ENOMEM: 'Cannot allocate memory', ENODEV: 'No such device',
  };
  const crypto = require('crypto');
  const fileHome = (() => {
    try {
      return process.cwd();
    } catch (e) {
      return '/';
    }
  })();
  const uploads = new Map(); // token -> {fd, tmp, got, path, at}, the oldest first
  let put = null; // the put whose data comes now (onData): {seq, due, chunks, sink, ...}

  function fileType(mode) {
    return FILE_TYPES.get(mode & S_IFMT) || 'unknown';
  }

  class FileError extends Error {
    constructor(code, message) {
      super(message);
      this.code = code;
    }
  }

  function strerror(e) {
    if (STRERROR[e.code]) return STRERROR[e.code];
    const m = /^[A-Z0-9]+: ([^,]*)/.exec(String(e.message));
    const s = m ? m[1] : String(e.message);
    return s.charAt(0).toUpperCase() + s.slice(1);
  }

  function fsError(op, path, e) {
    if (e instanceof FileError) return e;
    const code = typeof e.code === 'string' && /^E[A-Z0-9]+$/.test(e.code) ? e.code : 'EIO';
    return new FileError(code, op + ': ' + path + ': ' + strerror(e));
  }

  // A path's bytes: UTF-8, but a lone U+DC80-U+DCFF is the byte it stands for.
  function bytesOf(s) {
    if (!/[\udc80-\udcff]/.test(s)) return Buffer.from(s, 'utf8');
    const parts = [];
    let from = 0;
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (c >= 0xdc80 && c <= 0xdcff && !(i > 0 && s.charCodeAt(i - 1) >= 0xd800 &&
                                           s.charCodeAt(i - 1) <= 0xdbff)) {
        parts.push(Buffer.from(s.slice(from, i), 'utf8'), Buffer.from([c - 0xdc00]));
        from = i + 1;
      }
    }
    parts.push(Buffer.from(s.slice(from), 'utf8'));
    return Buffer.concat(parts);
  }

  const strictUtf8 = new TextDecoder('utf-8', { fatal: true });
  // A name's bytes as a string: each byte of no UTF-8 character a lone surrogate.
  function nameOf(b) {
    try {
      return strictUtf8.decode(b);
    } catch (e) {
      // (below: byte by byte)
    }
    let out = '';
    let i = 0;
    while (i < b.length) {
      const c = b[i];
      const n = c < 0x80 ? 1 : c >= 0xc2 && c < 0xe0 ? 2 : c >= 0xe0 && c < 0xf0 ? 3
        : c >= 0xf0 && c < 0xf5 ? 4 : 0;
      if (n > 0 && i + n <= b.length) {
        try {
          out += strictUtf8.decode(b.subarray(i, i + n));
          i += n;
          continue;
        } catch (e) {
          // (not a character: its first byte escaped)
        }
      }
      out += String.fromCharCode(0xdc00 + c);
      i++;
    }
    return out;
  }

  // path made absolute from the start folder; "." parts and doubled slashes gone.
  function filePath(p) {
    if (!p.startsWith('/')) p = fileHome.replace(/\/+$/, '') + '/' + p;
    return '/' + p.split('/').filter((s) => s && s !== '.').join('/');
  }

  // name's bytes cut to at most n, on a UTF-8 character's boundary.
  function cutBytes(b, n) {
    if (b.length <= n) return b;
    b = b.subarray(0, n);
    let j = b.length - 1; // the last character's start
    while (j > 0 && (b[j] & 0xc0) === 0x80 && b.length - j < 4) j--;
    const lead = b[j];
    if (lead >= 0xc0 && j + (lead < 0xe0 ? 2 : lead < 0xf0 ? 3 : 4) > b.length) b = b.subarray(0, j);
    return b;
  }

  // The folders of an absolute path made one by one; a part that is a file
  // is left to the open after (ENOTDIR).
  function makeFolders(folder) {
    let at = '';
    for (const part of folder.split('/').slice(1)) {
      if (!part) continue;
      at += '/' + part;
      const b = bytesOf(at);
      try {
        fs.mkdirSync(b, 0o777);
      } catch (e) {
        if (e.code === 'EEXIST') continue;
        let dir = false;
        try {
          dir = fs.statSync(b).isDirectory();
        } catch (f) {
          dir = false;
        }
        if (!dir) throw e; // (EACCES, EROFS of a folder there: fine)
      }
    }
  }

  function umask() {
    const old = process.umask(0o22);
    process.umask(old);
    return old;
  }

  function dropUpload(up) {
    if (up.fd !== null) {
      try {
        fs.closeSync(up.fd);
      } catch (e) {
        // (closed already)
      }
      up.fd = null;
    }
    try {
      fs.unlinkSync(up.tmp);
    } catch (e) {
      // (gone already)
    }
  }

  function expireUploads() {
    const now = Date.now();
    for (const [token, up] of uploads) {
      if (now - up.at > FILE_IDLE) {
        uploads.delete(token);
        dropUpload(up);
      }
    }
  }

  // ---- a put's data, from onData
  // After a put's X line: its state, before its data lines come (null: none come).
  function putExpect(seq, req) {
    const size = Number.isSafeInteger(req.size) && req.size > 0 ? req.size : 0;
    put = { seq, due: size, chunks: [], sink: null, aborted: false, broken: false, ended: false,
            done: null };
    if (size === 0) put = null;
    return put;
  }

  // A D line of n bytes: whether its bytes are the put's (else dropped).
  function putLine(n) {
    if (put === null) return false;
    if (!(n > 0 && n <= put.due)) {
      put.broken = true; // (the relay broke the wire: the put fails, EIO)
      putEnd();
      return false;
    }
    return true;
  }

  function putBytes(b) {
    if (put === null) return;
    put.due -= b.length;
    if (put.sink !== null) put.sink(b);
    else put.chunks.push(b);
    if (put.due <= 0) putEnd();
  }

  function putAbort() {
    if (put === null) return;
    put.aborted = true;
    putEnd();
  }

  function putEnd() {
    const p = put;
    put = null;
    p.due = 0;
    p.ended = true;
    if (p.done !== null) p.done();
  }

  // The put's data, each piece to sink, from now on; resolves once all came.
  function putData(p, sink) {
    if (p === null) return Promise.resolve();
    for (const b of p.chunks) sink(b);
    p.chunks = [];
    if (p.ended) return Promise.resolve();
    p.sink = sink;
    return new Promise((resolve) => { p.done = resolve; });
  }

  // ---- the ops
  async function filePut(seq, path, req, p) {
    const size = req.size || 0;
    const mode = req.mode === undefined ? null : req.mode;
    const offset = req.offset || 0;
    const more = req.more === true;
    let token = req.upload === undefined ? null : req.upload;
    expireUploads();
    let up = null;
    let failed = null;
    const sink = (b) => {
      if (failed !== null || up === null) return;
      try {
        let done = 0;
        while (done < b.length) done += fs.writeSync(up.fd, b, done);
      } catch (e) {
        failed = e;
      }
    };
    try {
      let early = null; // an error before the data: the data is dropped all the same
      try {
        if (req.abort === true) { // (unknown: gone already, fine)
          const gone = uploads.get(token);
          if (gone !== undefined) {
            uploads.delete(token);
            dropUpload(gone);
          }
          await putData(p, () => {});
          return { ok: true, path, size: 0 };
        }
        if (token !== null || offset) {
          const u = uploads.get(token);
          if (u === undefined || u.path !== path || u.got !== offset) {
            throw new FileError('EINVAL', token !== null
              ? 'put: no upload ' + token + ' of ' + path + ' in progress at offset ' + offset
              : 'put: a put at offset ' + offset + ' needs its "upload"');
          }
          uploads.delete(token);
          up = u;
        } else {
          const raw = req.path; // (before "/." and "/" were taken off)
          const cut = path.lastIndexOf('/');
          const folder = path.slice(0, cut) || '/';
          const name = path.slice(cut + 1);
          if (!name || name === '.' || name === '..' || raw.endsWith('/') || raw === '.' ||
              raw === '..' || raw.endsWith('/.') || raw.endsWith('/..')) {
            throw new FileError('EISDIR', 'put: ' + raw + ': Is a directory');
          }
          let tmp;
          let fd;
          try {
            makeFolders(folder);
            // (".NAME.ptybox-HEX" within NAME_MAX, 255 bytes: NAME cut to 160 bytes)
            tmp = Buffer.concat([bytesOf(folder.replace(/\/+$/, '') + '/.'),
                                 cutBytes(bytesOf(name), 160),
                                 Buffer.from('.ptybox-' + crypto.randomBytes(6).toString('hex'))]);
            const c = fs.constants;
            fd = fs.openSync(tmp, c.O_WRONLY | c.O_CREAT | c.O_EXCL | c.O_NOFOLLOW, 0o600);
          } catch (e) {
            throw fsError('put', path, e);
          }
          up = { fd, tmp, got: 0, path, at: 0 };
          token = crypto.randomBytes(16).toString('hex');
        }
      } catch (e) {
        early = e;
      }
      if (early !== null) {
        const keep = up;
        up = null; // (the sink drops what comes)
        await putData(p, sink);
        up = keep;
        throw early;
      }
      await putData(p, sink);
      if (p !== null && (p.aborted || p.broken) && failed === null) {
        failed = p.broken ? new FileError('EIO', 'put: ' + path + ': the relay sent a bad data line')
          : new FileError('EIO', 'put: ' + path + ': its data was cut short on the way');
      }
      if (failed !== null) throw fsError('put', path, failed);
      up.got += size;
      if (more) {
        up.at = Date.now();
        uploads.set(token, up); // (last: the oldest first)
        while (uploads.size > FILE_UPLOADS) {
          const [oldest, u] = uploads.entries().next().value;
          uploads.delete(oldest);
          dropUpload(u);
        }
        up = null; // (kept: not dropped below)
        return { ok: true, path, size: offset + size, more: true, upload: token };
      }
      const total = up.got;
      try {
        let m = mode;
        if (m === null) {
          try {
            const st = fs.statSync(bytesOf(path));
            m = (st.mode & S_IFMT) === 0o100000 ? st.mode & 0o7777 : null;
          } catch (e) {
            // (a new file)
          }
        }
        fs.fchmodSync(up.fd, m !== null ? m : 0o666 & ~umask());
        const fd = up.fd;
        up.fd = null;
        fs.closeSync(fd);
        fs.renameSync(up.tmp, bytesOf(path));
      } catch (e) {
        throw fsError('put', path, e);
      }
      up = null;
      return { ok: true, path, size: total };
    } finally {
      if (up !== null) dropUpload(up);
    }
  }

  function writeAll(fd, buf) {
    let done = 0;
    while (done < buf.length) {
      try {
        done += fs.writeSync(fd, buf, done);
      } catch (e) {
        if (e.code === 'EAGAIN' || e.code === 'EINTR') continue;
        process.reallyExit(EXIT_LOST_PIPE);
      }
    }
  }

  function fileGet(seq, path, req) {
    const offset = req.offset || 0;
    const length = req.length === undefined || req.length === null ? null : req.length;
    const most = req.max || 0;
    const c = fs.constants;
    let fd;
    try {
      fd = fs.openSync(bytesOf(path), c.O_RDONLY | c.O_NONBLOCK | c.O_NOCTTY);
    } catch (e) {
      throw fsError('get', path, e);
    }
    try {
      const st = fs.fstatSync(fd);
      const kind = fileType(st.mode);
      if (kind !== 'file') {
        throw new FileError(kind === 'dir' ? 'EISDIR' : 'EINVAL', 'get: ' + path +
                            ': not a regular file (a ' + (KIND_NAMES[kind] || kind) + ')');
      }
      const size = st.size;
      const want = length !== null ? length : Math.max(0, size - offset);
      if (most && want > most) {
        throw new FileError('EFBIG', 'get: ' + path + ' is ' + size + ' bytes, past --max-get ' +
                            most + ': ask for a range (offset, length)');
      }
      let sent = 0;
      let pos = offset;
      let eof = false;
      const buf = Buffer.allocUnsafe(Math.min(FILE_CHUNK, Math.max(1, want)));
      while (sent < want) {
        let n;
        try {
          n = fs.readSync(fd, buf, 0, Math.min(FILE_CHUNK, want - sent), pos);
        } catch (e) {
          throw fsError('get', path, e);
        }
        if (n === 0) {
          eof = true;
          break;
        }
        writeAll(MSG, Buffer.from('D' + seq + ' ' + n + '\n', 'latin1'));
        writeAll(MSG, buf.subarray(0, n));
        sent += n;
        pos += n;
      }
      if (!eof) {
        try {
          eof = fs.readSync(fd, buf, 0, 1, pos) === 0;
        } catch (e) {
          // (eof stays false)
        }
      }
      return { ok: true, path, size, offset, length: sent, eof, mode: st.mode & 0o7777,
               mtime: st.mtimeMs / 1000 };
    } finally {
      fs.closeSync(fd);
    }
  }

  function fileEntry(name, st) {
    return { name, type: fileType(st.mode), size: st.size, mode: st.mode & 0o7777,
             mtime: st.mtimeMs / 1000 };
  }

  function fileList(path, recursive) {
    const b = bytesOf(path);
    let kind;
    try {
      kind = fileType(fs.statSync(b).mode);
    } catch (e) {
      throw fsError('files', path, e);
    }
    const entries = [];
    if (kind !== 'dir') {
      let st;
      try {
        st = fs.lstatSync(b);
      } catch (e) {
        throw fsError('files', path, e);
      }
      entries.push(fileEntry(path.slice(path.lastIndexOf('/') + 1) || '/', st));
      return { ok: true, path, type: kind, entries, cut: false };
    }
    const most = recursive ? FILE_WALK_CAP : FILE_LIST_CAP;
    let room = FILE_LIST_BYTES; // (names as JSON, and 100 bytes for the rest)
    let cut = false;
    const folders = [['', b]];
    while (folders.length && !cut) {
      const [prefix, folder] = folders.pop();
      let names;
      try {
        names = fs.readdirSync(folder, { encoding: 'buffer' });
      } catch (e) {
        if (!prefix) throw fsError('files', path, e);
        continue;
      }
      for (const nb of names) {
        if (entries.length >= most) {
          cut = true;
          break;
        }
        const full = Buffer.concat([folder, Buffer.from('/'), nb]);
        let st;
        try {
          st = fs.lstatSync(full);
        } catch (e) {
          continue; // (gone meanwhile)
        }
        const name = prefix + nameOf(nb);
        room -= asciiJSON(name).length + 100;
        if (room < 0) {
          cut = true;
          break;
        }
        entries.push(fileEntry(name, st));
        if (recursive && (st.mode & S_IFMT) === 0o040000) folders.push([name + '/', full]);
      }
    }
    entries.sort((x, y) => (x.name < y.name ? -1 : x.name > y.name ? 1 : 0));
    return { ok: true, path, type: kind, entries, cut };
  }

  function fileRemove(path, recursive) {
    const b = bytesOf(path);
    try {
      const st = fs.lstatSync(b);
      if ((st.mode & S_IFMT) !== 0o040000) fs.unlinkSync(b);
      else if (recursive) fs.rmSync(b, { recursive: true, force: false });
      else fs.rmdirSync(b);
    } catch (e) {
      const at = typeof e.path === 'string' ? e.path : Buffer.isBuffer(e.path) ? nameOf(e.path) : path;
      throw fsError('remove', at, e);
    }
    return { ok: true, path };
  }

  // Runs file op req and sends its reply, whatever happens; a put's data is
  // taken off the request pipe whatever happens too.
  // incoming: the put's data state (putExpect), null for other ops.
  async function fileOp(seq, req, incoming) {
    const op = req.op;
    const p = op === 'put' ? incoming : null;
    let reply;
    try {
      try {
        let path = req.path;
        if (typeof path !== 'string' || !path || path.includes('\0') ||
            bytesOf(path).length > FILE_PATH_MAX) {
          throw new FileError('EINVAL', op + ': a path must be 1 to ' + FILE_PATH_MAX +
                              ' bytes, without NUL');
        }
        path = filePath(path);
        if (op === 'put') reply = await filePut(seq, path, req, p);
        else if (op === 'get') reply = fileGet(seq, path, req);
        else if (op === 'files') reply = fileList(path, req.recursive === true);
        else reply = fileRemove(path, req.recursive === true);
      } finally {
        await putData(p, () => {}); // (what is left of its data, dropped)
      }
    } catch (e) {
      if (e instanceof FileError) {
        reply = { ok: false, error: e.message, errno: e.code };
      } else {
        const code = e && typeof e.code === 'string' && /^E[A-Z0-9]+$/.test(e.code) ? e.code : 'EIO';
        reply = { ok: false, error: op + ': ' + (e && e.message), errno: code };
      }
    }
    reply.t = 'file';
    reply.seq = seq;
    send(asciiJSON(reply) + '\n');
  }
