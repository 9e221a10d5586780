# bash completion for ptybox(1).
# Install as /usr/share/bash-completion/completions/ptybox, or source it.
# Options follow the getopt tables of src/cli_run.c, src/cli_serve.c,
# src/cli_client.c, src/cli_server.c and CLI_SESSION_LONGOPTS in src/cli.h.

# The server's sessions, one name a line, from `ptybox ls --json` (the name is
# each object's first member): nothing when no server runs, and `ls` never
# starts one; a server that does not answer within 2 s gives none. The -L or
# -S of the command line choose the server; with -H (ssh to another machine)
# no names are offered rather than wait on ssh.
_ptybox_sessions()
{
	local i server=()
	for ((i = 1; i < cword; i++)); do
		case ${words[i]} in
		-L | -S) server=("${words[i]}" "${words[i + 1]}") ;;
		-H | -H*) return ;;
		esac
	done
	command timeout 2 ptybox "${server[@]}" ls --json 2>/dev/null </dev/null |
		sed -n 's/^{"name":"\(\([^"\\]\|\\.\)*\)",.*/\1/p'
}

_ptybox()
{
	local cur prev words cword
	# Words split on blanks only, so "--via=exec:docker" stays one word.
	if declare -F _init_completion >/dev/null 2>&1; then
		_init_completion -n =: || return
	else
		COMPREPLY=()
		local line=${COMP_LINE:0:COMP_POINT}
		read -ra words <<<"$line"
		[[ $line == *[[:blank:]] ]] && words+=('')
		cword=$((${#words[@]} - 1))
		cur=${words[cword]}
		prev=${words[cword - 1]}
	fi

	local session_opts='--via --timeout --kill-grace --max-output --memory --pids
		--cpus --tmp-size --nofile --max-file-size --max-get --net --env --lang --python --packages --log --busy-poll
		--mount --workdir --wheels'
	local vias='local none ssh:// exec:'
	# What the human modes (run, repl) show: pictures, recordings, a terminal.
	local human_opts='--record --record-max --output-dir --no-inline-images'

	# The subcommand is the first word after "ptybox".
	local cmd='' i
	for ((i = 1; i < cword; i++)); do
		case ${words[i]} in
		run | repl | serve | mcp | new | exec | result | ls | interrupt | cancel | restart | kill | \
			kill-server | capture | watch | attach | cp | server | dial-stdio)
			cmd=${words[i]}
			break
			;;
		esac
	done

	if [[ -z $cmd ]]; then
		case $prev in
		-L) return ;; # a server's name of the user's own
		-S)
			compopt -o filenames 2>/dev/null
			COMPREPLY=($(compgen -f -- "$cur"))
			return
			;;
		-H)
			compopt -o nospace 2>/dev/null
			COMPREPLY=($(compgen -W 'ssh://' -- "$cur"))
			return
			;;
		esac
		COMPREPLY=($(compgen -W 'run repl serve mcp new exec result ls interrupt cancel restart
			kill kill-server capture watch attach cp server dial-stdio -L -S -H --help
			--version' -- "$cur"))
		return
	fi

	# The option whose value is being typed: "--opt value" or "--opt=value".
	local opt='' val=$cur
	if [[ $cur == --*=* ]]; then
		opt=${cur%%=*}
		val=${cur#*=}
	elif [[ $prev == -* && $cur != -* ]]; then
		opt=$prev
	fi
	case $opt in
	--via)
		compopt -o nospace 2>/dev/null
		COMPREPLY=($(compgen -W "$vias" -- "$val"))
		# "local" and "none" are whole values; ssh:// and exec: go on.
		if [[ ${#COMPREPLY[@]} -eq 1 && ${COMPREPLY[0]} != *[:/] ]]; then
			COMPREPLY[0]+=' '
		fi
		# ':' breaks words in bash: complete only what follows the last one.
		if [[ $val == *:* && $COMP_WORDBREAKS == *:* ]]; then
			local colon=${val%"${val##*:}"} j
			for j in "${!COMPREPLY[@]}"; do
				COMPREPLY[j]=${COMPREPLY[j]#"$colon"}
			done
		fi
		return
		;;
	--lang)
		COMPREPLY=($(compgen -W 'python bash node' -- "$val"))
		return
		;;
	--with)
		COMPREPLY=($(compgen -W "$(_ptybox_sessions)" -- "$val"))
		return
		;;
	--python | --packages | --put)
		compopt -o filenames 2>/dev/null
		COMPREPLY=($(compgen -f -- "$val")) # (a path: commands are not looked up)
		return
		;;
	--log | -S)
		[[ $opt == -S && $cmd == capture ]] && return # capture's -S START
		compopt -o filenames 2>/dev/null
		COMPREPLY=($(compgen -f -- "$val"))
		return
		;;
	--record)
		# an asciicast file: the .cast ones, and folders to go into
		compopt -o filenames 2>/dev/null
		COMPREPLY=($(compgen -d -- "$val") $(compgen -f -X '!*.cast' -- "$val"))
		return
		;;
	--output-dir | --wheels | --cwd)
		compopt -o filenames 2>/dev/null
		COMPREPLY=($(compgen -d -- "$val"))
		return
		;;
	--mount)
		# HOST_PATH first: a host file or folder
		compopt -o filenames 2>/dev/null
		COMPREPLY=($(compgen -f -- "$val"))
		return
		;;
	-L)
		return
		;;
	--timeout | --kill-grace | --max-output | --memory | --pids | --cpus | \
		--tmp-size | --nofile | --max-file-size | --max-get | --env | --pool | --max-text | --busy-poll | --record-max | -c | -H | \
		--workdir | --get)
		# a value of the user's own
		return
		;;
	esac

	case $cmd in
	run)
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "-c --json --raw --tty --put --get --help $human_opts $session_opts" -- "$cur"))
		else
			COMPREPLY=($(compgen -f -- "$cur"))
			compopt -o filenames 2>/dev/null
		fi
		;;
	repl)
		COMPREPLY=($(compgen -W "--help $human_opts $session_opts" -- "$cur"))
		;;
	serve)
		case $prev in
		--token-file) COMPREPLY=($(compgen -f -- "$cur")); return ;;
		--max-executes) return ;;
		esac
		COMPREPLY=($(compgen -W "--stdio --http --token-file --max-executes --allow-net --pool --stop-at-eof --quiet --help $session_opts" -- "$cur"))
		;;
	mcp)
		# (the session options but --log: the sessions are a server's)
		COMPREPLY=($(compgen -W "--pool --max-text --help -L -S -H ${session_opts/--log /}" -- "$cur"))
		;;
	new)
		COMPREPLY=($(compgen -W "--pool --with --record --record-max --help -L -S -H $session_opts" -- "$cur"))
		;;
	exec | result | interrupt | cancel | restart | kill | capture | watch | attach)
		if [[ $cur == -* ]]; then
			local o='--help -L -S -H'
			[[ $cmd == exec ]] && o+=' -c --json --raw --timeout --no-wait --stop-on-error -i --stdin --env --cwd'
			[[ $cmd == result ]] && o+=' --json --raw --no-wait'
			[[ $cmd == capture ]] && o='--help -L -H -e -S'
			[[ $cmd == attach ]] && o+=" $human_opts"
			COMPREPLY=($(compgen -W "$o" -- "$cur"))
		else
			# The first word that is no option is the session; after it
			# come exec's FILE and the ids of the others.
			local j npos=0
			for ((j = i + 1; j < cword; j++)); do
				case ${words[j]} in
				-c | --timeout | -L | -S | -H | --record) ((j++)) ;;
				-*) ;;
				*) ((npos++)) ;;
				esac
			done
			if ((npos > 0)); then
				if [[ $cmd == exec ]]; then
					compopt -o filenames 2>/dev/null
					COMPREPLY=($(compgen -f -- "$cur"))
				fi
				return
			fi
			# the server's sessions, by name (nothing if none runs); a
			# name with blanks comes back quoted
			local IFS=$'\n' name
			for name in $(_ptybox_sessions); do
				[[ $name == "$cur"* ]] && COMPREPLY+=("$(printf '%q' "$name")")
			done
		fi
		;;
	cp)
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "--help -L -S -H" -- "$cur"))
		elif [[ $cur != *:* ]]; then
			# SESSION: (the server's sessions) or a path here; a session's
			# own paths are not listed (that would run its code's queue)
			local IFS=$'\n' name
			for name in $(_ptybox_sessions); do
				[[ $name == "$cur"* ]] && COMPREPLY+=("$(printf '%q' "$name"):")
			done
			COMPREPLY+=($(compgen -f -- "$cur"))
			compopt -o nospace -o filenames 2>/dev/null
		fi
		;;
	ls)
		COMPREPLY=($(compgen -W "--json --help -L -S -H" -- "$cur"))
		;;
	server)
		COMPREPLY=($(compgen -W "--foreground --allow-remote-transports --help -L -S" -- "$cur"))
		;;
	esac
} &&
	complete -F _ptybox ptybox
