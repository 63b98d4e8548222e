# bash completion for einsum-bench (installed by make install as
# share/bash-completion/completions/einsum-bench). Options come from the
# tool's own `help COMMAND`, so they never go stale.
_einsum_bench() {
  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
  local tool=${COMP_WORDS[0]} cmd=${COMP_WORDS[1]:-}
  local commands="run check plan compare info gen path help"
  if [ "$COMP_CWORD" -eq 1 ]; then
    mapfile -t COMPREPLY < <(compgen -W "$commands --help --version" -- "$cur")
    return
  fi
  case $prev in
    --mode) mapfile -t COMPREPLY < <(compgen -W "eager trace both" -- "$cur"); return ;;
    --dtype) mapfile -t COMPREPLY < <(compgen -W "float64 float32 complex128 complex64" -- "$cur"); return ;;
    --fill) mapfile -t COMPREPLY < <(compgen -W "zeros random random:" -- "$cur"); return ;;
    --strategy) mapfile -t COMPREPLY < <(compgen -W "all opt_flops opt_size" -- "$cur"); return ;;
    --minimize) mapfile -t COMPREPLY < <(compgen -W "flops size" -- "$cur"); return ;;
    --warmup|--samples|--threads|--check-seed|--filter|--fail-above) return ;;
  esac
  if [ "$cmd" = help ]; then
    mapfile -t COMPREPLY < <(compgen -W "$commands" -- "$cur")
    return
  fi
  if [[ $cur == -* ]]; then
    local opts
    opts=$("$tool" help "$cmd" 2>/dev/null | grep -oE '^ +--[a-z0-9-]+')
    mapfile -t COMPREPLY < <(compgen -W "$opts" -- "$cur")
    return
  fi
  compopt -o filenames 2>/dev/null
  mapfile -t COMPREPLY < <(compgen -f -- "$cur")
}
complete -F _einsum_bench einsum-bench
