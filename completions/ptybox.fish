# fish completion for ptybox(1).
# Install as ~/.config/fish/completions/ptybox.fish or in a folder of
# $fish_complete_path. Options follow the getopt tables of src/cli_run.c,
# src/cli_serve.c and CLI_SESSION_LONGOPTS in src/cli.h.

complete -c ptybox -f

# ptybox COMMAND
complete -c ptybox -n __fish_use_subcommand -a run -d 'Run snippets in one session'
complete -c ptybox -n __fish_use_subcommand -a serve -d 'Drive a session with JSON lines'
complete -c ptybox -n __fish_use_subcommand -s h -l help -d 'Show help'
complete -c ptybox -n __fish_use_subcommand -l version -d 'Show the version'

# ptybox run
complete -c ptybox -n '__fish_seen_subcommand_from run' -s c -x -d 'A snippet (repeatable)'
complete -c ptybox -n '__fish_seen_subcommand_from run' -l json -d 'One result object per snippet per line'
complete -c ptybox -n '__fish_seen_subcommand_from run' -l raw -d 'Write escape sequences to a terminal as they are'
complete -c ptybox -n '__fish_seen_subcommand_from run' -F -d 'File to run (- for standard input)'

# ptybox serve
complete -c ptybox -n '__fish_seen_subcommand_from serve' -l stdio -d 'JSON lines on stdin and stdout'
complete -c ptybox -n '__fish_seen_subcommand_from serve' -l pool -x -d 'Interpreters started ahead, 0 to 64 (default 0)'

# Options of both
set -l in_cmd '__fish_seen_subcommand_from run serve'
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
complete -c ptybox -n $in_cmd -l net -d "Give the sandbox the host's network"
complete -c ptybox -n $in_cmd -l env -x -d 'Set a variable for the code: NAME=VALUE (repeatable)'
complete -c ptybox -n $in_cmd -l python -r -a '(__fish_complete_command)' -d 'Interpreter to run the driver on'
complete -c ptybox -n $in_cmd -l log -r -F -d 'Write a debug log to FILE'
