# bash completion for ptybox(1).
# Install as /usr/share/bash-completion/completions/ptybox, or source it.
# Options follow the getopt tables of src/cli_run.c, src/cli_serve.c,
# src/cli_client.c, src/cli_server.c and CLI_SESSION_LONGOPTS in src/cli.h.

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
		--cpus --tmp-size --nofile --max-file-size --net --env --python --log --busy-poll'
	local vias='local none ssh:// exec:'

	# The subcommand is the first word after "ptybox".
	local cmd='' i
	for ((i = 1; i < cword; i++)); do
		case ${words[i]} in
		run | serve | new | exec | result | ls | interrupt | cancel | restart | kill | \
			kill-server | capture | watch | server | dial-stdio)
			cmd=${words[i]}
			break
			;;
		esac
	done

	if [[ -z $cmd ]]; then
		COMPREPLY=($(compgen -W 'run serve new exec result ls interrupt cancel restart kill
			kill-server capture watch server dial-stdio -L -S -H --help --version' -- "$cur"))
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
	--python)
		compopt -o filenames 2>/dev/null
		COMPREPLY=($(compgen -f -- "$val")) # (a path: commands are not looked up)
		return
		;;
	--log)
		compopt -o filenames 2>/dev/null
		COMPREPLY=($(compgen -f -- "$val"))
		return
		;;
	--timeout | --kill-grace | --max-output | --memory | --pids | --cpus | \
		--tmp-size | --nofile | --max-file-size | --env | --pool | --busy-poll | -c)
		# a value of the user's own
		return
		;;
	esac

	case $cmd in
	run)
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "-c --json --raw --tty --help $session_opts" -- "$cur"))
		else
			COMPREPLY=($(compgen -f -- "$cur"))
			compopt -o filenames 2>/dev/null
		fi
		;;
	serve)
		COMPREPLY=($(compgen -W "--stdio --pool --help $session_opts" -- "$cur"))
		;;
	new)
		COMPREPLY=($(compgen -W "--pool --help $session_opts" -- "$cur"))
		;;
	exec | result | interrupt | cancel | restart | kill | capture | watch)
		if [[ $cur == -* ]]; then
			local o='--help -L -S -H'
			[[ $cmd == exec ]] && o+=' -c --json --raw --timeout --no-wait --stop-on-error'
			[[ $cmd == result ]] && o+=' --json --raw --no-wait'
			[[ $cmd == capture ]] && o='--help -L -H -e -S'
			COMPREPLY=($(compgen -W "$o" -- "$cur"))
		else
			# the server's sessions, by name (nothing if none runs)
			local names
			names=$(ptybox ls 2>/dev/null | awk 'NR > 1 { print $1 }')
			COMPREPLY=($(compgen -W "$names" -- "$cur"))
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
