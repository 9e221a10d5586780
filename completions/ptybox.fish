# fish completion for ptybox(1).
# Install as ~/.config/fish/completions/ptybox.fish or in a folder of
# $fish_complete_path. Options follow the getopt tables of src/cli_run.c,
# src/cli_serve.c and CLI_SESSION_LONGOPTS in src/cli.h.

complete -c ptybox -f

# The server's sessions, from `ptybox ls --json` (the name is each object's
# first member): nothing when no server runs, and `ls` never starts one (nor
# waits more than 2 s for a server that does not answer). The
# -L or -S of the command line choose the server; with -H (over ssh) no names
# are offered rather than wait on ssh.
function __ptybox_sessions
    set -l words (commandline -opc)
    set -l server
    for i in (seq 2 (count $words))
        switch $words[$i]
            case -L -S
                set -l next (math $i + 1)
                if test $next -le (count $words)
                    set server $words[$i] $words[$next]
                end
            case '-H*'
                return
        end
    end
    command timeout 2 ptybox $server ls --json 2>/dev/null </dev/null | sed -n 's/^{"name":"\(\([^"\\]\|\\.\)*\)",.*/\1/p'
end

# Recordings: the .cast files and the folders of what is typed so far (a
# wildcard that matches nothing is an empty list in `set`).
function __ptybox_casts
    set -l typed (commandline -ct)
    set -l found $typed*.cast $typed*/
    printf '%s\n' $found
end

# Whether the word being typed is the session: no word after the subcommand
# yet but options (and their values).
function __ptybox_needs_session
    set -l words (commandline -opc)
    set -l seen 0
    set -l skip 0
    for w in $words[2..-1]
        if test $skip = 1
            set skip 0
            continue
        end
        switch $w
            case -c --timeout -L -S -H --record
                set skip 1
            case '-*'
            case '*'
                set seen (math $seen + 1)
        end
    end
    # the subcommand itself is the first such word
    test $seen -le 1
end

# ptybox COMMAND
complete -c ptybox -n __fish_use_subcommand -a run -d 'Run snippets in one session'
complete -c ptybox -n __fish_use_subcommand -a repl -d 'A stateful prompt on a fresh session'
complete -c ptybox -n __fish_use_subcommand -a serve -d 'Drive a session with JSON lines'
complete -c ptybox -n __fish_use_subcommand -a mcp -d 'An MCP server on stdio, for agents'
complete -c ptybox -n __fish_use_subcommand -a new -d 'Create a session in the server'
complete -c ptybox -n __fish_use_subcommand -a exec -d 'Run code in a session of the server'
complete -c ptybox -n __fish_use_subcommand -a result -d "An execution's result"
complete -c ptybox -n __fish_use_subcommand -a ls -d "The server's sessions"
complete -c ptybox -n __fish_use_subcommand -a interrupt -d 'Interrupt what runs in a session'
complete -c ptybox -n __fish_use_subcommand -a cancel -d 'Drop a queued execution'
complete -c ptybox -n __fish_use_subcommand -a restart -d 'A fresh interpreter for a session'
complete -c ptybox -n __fish_use_subcommand -a kill -d 'End a session'
complete -c ptybox -n __fish_use_subcommand -a kill-server -d 'End every session and the server'
complete -c ptybox -n __fish_use_subcommand -a capture -d "A session's screen as text"
complete -c ptybox -n __fish_use_subcommand -a watch -d 'Follow a session as JSON lines'
complete -c ptybox -n __fish_use_subcommand -a attach -d 'The prompt on a session of the server'
complete -c ptybox -n __fish_use_subcommand -a cp -d 'Copy files between here and a session'
complete -c ptybox -n __fish_use_subcommand -a server -d 'Start the server'
complete -c ptybox -n __fish_use_subcommand -a dial-stdio -d "The server's socket on stdin and stdout"
complete -c ptybox -n '__fish_seen_subcommand_from exec result interrupt cancel restart kill capture watch attach; and __ptybox_needs_session' -a '(__ptybox_sessions)' -d Session
complete -c ptybox -n '__fish_seen_subcommand_from exec; and not __ptybox_needs_session' -F -d 'File to run (- for standard input)'
# cp SRC DST: SESSION: (a session's own paths are not listed) or a path here
complete -c ptybox -n '__fish_seen_subcommand_from cp; and not string match -q "*:*" -- (commandline -ct)' -a '(__ptybox_sessions | string replace -r \$ :)' -d Session
complete -c ptybox -n '__fish_seen_subcommand_from cp; and not string match -q "*:*" -- (commandline -ct)' -F
complete -c ptybox -n '__fish_seen_subcommand_from exec' -l raw -d 'Write escape sequences to a terminal as they are'
complete -c ptybox -n '__fish_seen_subcommand_from exec' -l timeout -x -d "These snippets' time limit, seconds"
complete -c ptybox -n '__fish_seen_subcommand_from exec' -l stop-on-error -d 'Drop the snippets after one that fails'
complete -c ptybox -n '__fish_seen_subcommand_from exec' -s i -l stdin -d "Standard input, read whole, is the first snippet's"
complete -c ptybox -n '__fish_seen_subcommand_from exec' -l env -x -d 'NAME=VALUE in os.environ while these snippets run'
complete -c ptybox -n '__fish_seen_subcommand_from exec' -l cwd -x -a '(__fish_complete_directories)' -d 'The folder these snippets run in'
complete -c ptybox -n '__fish_seen_subcommand_from result' -l no-wait -d 'Say running or queued instead of waiting'
complete -c ptybox -n '__fish_seen_subcommand_from capture' -s e -d 'Keep colours'
complete -c ptybox -n '__fish_seen_subcommand_from server' -l foreground -d 'Do not daemonize; log on standard error'
complete -c ptybox -n '__fish_seen_subcommand_from server' -l allow-remote-transports -d 'Let dial-stdio clients start ssh:, exec:, none sessions'
complete -c ptybox -n '__fish_seen_subcommand_from new' -l with -x -a '(__ptybox_sessions)' -d 'Run in that session\'s sandbox'
complete -c ptybox -n '__fish_seen_subcommand_from new' -l record -x -a '(__ptybox_casts)' -d 'Record what the session shows (asciicast v2)'
complete -c ptybox -n '__fish_use_subcommand; or __fish_seen_subcommand_from mcp new exec result ls interrupt cancel restart kill kill-server watch attach cp server dial-stdio' -s L -x -d 'The server named NAME'
complete -c ptybox -n '__fish_use_subcommand; or __fish_seen_subcommand_from mcp new exec result ls interrupt cancel restart kill kill-server watch attach cp server dial-stdio' -s S -r -F -d 'The server at socket PATH'
complete -c ptybox -n '__fish_use_subcommand; or __fish_seen_subcommand_from mcp new exec result ls interrupt cancel restart kill kill-server watch attach cp' -s H -x -a 'ssh://' -d 'The server on another machine'
complete -c ptybox -n '__fish_seen_subcommand_from exec' -s c -x -d 'A snippet (repeatable)'
complete -c ptybox -n '__fish_seen_subcommand_from exec result ls' -l json -d 'JSON lines'
complete -c ptybox -n '__fish_seen_subcommand_from exec' -l no-wait -d "Print each execution's id and return"
complete -c ptybox -n __fish_use_subcommand -s h -l help -d 'Show help'
complete -c ptybox -n __fish_use_subcommand -l version -d 'Show the version'

# ptybox run
complete -c ptybox -n '__fish_seen_subcommand_from run' -s c -x -d 'A snippet (repeatable)'
complete -c ptybox -n '__fish_seen_subcommand_from run' -l json -d 'One result object per snippet per line'
complete -c ptybox -n '__fish_seen_subcommand_from run' -l raw -d 'Write escape sequences to a terminal as they are'
complete -c ptybox -n '__fish_seen_subcommand_from run' -F -d 'File to run (- for standard input)'
complete -c ptybox -n '__fish_seen_subcommand_from run new' -l record-max -x -d "The recording's largest size (default 64M)"

# What the human modes show: pictures, recordings, a terminal
set -l human '__fish_seen_subcommand_from run repl attach'
complete -c ptybox -n $human -l record -x -a '(__ptybox_casts)' -d 'Record what the session shows (asciicast v2)'
complete -c ptybox -n '__fish_seen_subcommand_from repl attach' -l record-max -x -d "The recording's largest size (default 64M)"
complete -c ptybox -n $human -l output-dir -x -a '(__fish_complete_directories)' -d 'Folder for the pictures (default: the current one)'
complete -c ptybox -n $human -l no-inline-images -d 'Do not show pictures inline on the terminal'
complete -c ptybox -n '__fish_seen_subcommand_from run' -l tty -d "The code's stdout is a terminal"
complete -c ptybox -n '__fish_seen_subcommand_from run' -l put -r -F -d 'Copy FILE[:PATH] into the sandbox before the first snippet'
complete -c ptybox -n '__fish_seen_subcommand_from run' -l get -x -d 'Copy PATH out of the sandbox after the last snippet'

# ptybox serve
complete -c ptybox -n '__fish_seen_subcommand_from serve' -l stdio -d 'JSON lines on stdin and stdout'
complete -c ptybox -n '__fish_seen_subcommand_from serve new mcp' -l pool -x -d 'Interpreters started ahead, 0 to 64 (default 0)'
complete -c ptybox -n '__fish_seen_subcommand_from mcp' -l max-text -x -d 'The most of one text item for the model (default 64K)'
complete -c ptybox -n '__fish_seen_subcommand_from serve' -l http -d "Piston's API over HTTP on ADDR (default 127.0.0.1:2000)"
complete -c ptybox -n '__fish_seen_subcommand_from serve' -l token-file -r -F -d 'With --http: the bearer token every request needs'
complete -c ptybox -n '__fish_seen_subcommand_from serve' -l max-executes -x -d 'With --http: executes at once, then 429 (default 64)'
complete -c ptybox -n '__fish_seen_subcommand_from serve' -l allow-net -d "With --http: a session may ask for the host's network"
complete -c ptybox -n '__fish_seen_subcommand_from serve' -l stop-at-eof -d 'At the end of input stop at once, ending what runs'
complete -c ptybox -n '__fish_seen_subcommand_from serve' -l quiet -d 'A session that cannot start is said on stdout only'

# Options of both
set -l in_cmd '__fish_seen_subcommand_from run repl serve new mcp'
complete -c ptybox -n $in_cmd -s h -l help -d 'Show help'
complete -c ptybox -n $in_cmd -l via -x -d 'Where the interpreter runs' -a "
	local\t'The embedded sandbox (default)'
	none\t'No sandbox, with your privileges and files'
	ssh://\t'Experimental: ssh://[user@]host[:port]'
	exec:\t'Experimental: exec:COMMAND that gives a terminal'"
complete -c ptybox -n $in_cmd -l timeout -x -d 'Per-snippet time limit, seconds (default 30; 0 = none)'
complete -c ptybox -n $in_cmd -l kill-grace -x -d 'Seconds between ^C and kill (default 2)'
complete -c ptybox -n $in_cmd -l busy-poll -x -d 'Microseconds to poll for each answer before sleeping (default 100; 0 = never)'
complete -c ptybox -n $in_cmd -l max-output -x -d 'Bytes kept per stream, head and tail (default 4M)'
complete -c ptybox -n $in_cmd -l memory -x -d 'Memory limit (default 1G; 0 = none)'
complete -c ptybox -n $in_cmd -l pids -x -d 'Process limit (default 256; 0 = none)'
complete -c ptybox -n $in_cmd -l cpus -x -d 'CPU quota (default 1; 0 = none)'
complete -c ptybox -n $in_cmd -l tmp-size -x -d "Size of the sandbox's /tmp (default 256M, kept below --memory)"
complete -c ptybox -n $in_cmd -l nofile -x -d 'Open files limit (default 1024)'
complete -c ptybox -n $in_cmd -l max-file-size -x -d 'Largest file the code may write (default 256M)'
complete -c ptybox -n $in_cmd -l max-get -x -d 'Largest file a get sends whole (default 64M)'
complete -c ptybox -n $in_cmd -l net -d "Give the sandbox the host's network"
complete -c ptybox -n $in_cmd -l env -x -d 'Set a variable for the code: NAME=VALUE (repeatable)'
complete -c ptybox -n $in_cmd -l mount -r -F -d 'Show a host file or folder in the sandbox: HOST_PATH:SANDBOX_PATH[:ro|:rw]'
complete -c ptybox -n $in_cmd -l workdir -x -d 'The folder the code starts in (default /tmp)'
complete -c ptybox -n $in_cmd -l wheels -x -a '(__fish_complete_directories)' -d 'A folder of wheels for pip install without the network'
complete -c ptybox -n $in_cmd -l lang -x -a 'python bash node' -d 'The language (default python)'
complete -c ptybox -n $in_cmd -l python -r -F -d 'Interpreter to run the driver on'
complete -c ptybox -n $in_cmd -l packages -r -F -d 'The folder pip installs into, as the code sees it'
complete -c ptybox -n '__fish_seen_subcommand_from run repl serve new' -l log -r -F -d 'Write a debug log to FILE'
