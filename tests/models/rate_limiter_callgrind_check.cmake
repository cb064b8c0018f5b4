# Runs the callgrind driver once per path and checks, per call, the
# instructions executed and the locked (lock-prefixed: atomic read-modify-
# write) instructions executed, against the limits (see
# tests/rate_limiter_callgrind.cmake).
#
# Locked instructions: callgrind counts executions per instruction address
# (--dump-instr=yes); objdump -d of the driver names the addresses that carry
# a `lock` prefix; the sum of their execution counts in the driver's object,
# divided by N, is the locked instructions per call. (xchg with a memory
# operand is locked without the prefix: it is counted too.) The limiter's hot
# paths are inline, so they are all in the driver's object.
cmake_minimum_required(VERSION 3.20)  # IN_LIST, policies of a script
set(N 1000000)
file(REMOVE_RECURSE ${WORKDIR})
file(MAKE_DIRECTORY ${WORKDIR})

# The driver's addresses of locked instructions, as "0x<hex>" (callgrind's
# spelling).
execute_process(COMMAND ${OBJDUMP} -d --no-show-raw-insn ${DRIVER}
                RESULT_VARIABLE rc OUTPUT_VARIABLE disassembly ERROR_VARIABLE e)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "objdump -d ${DRIVER} failed (${rc}): ${e}")
endif()
string(REGEX MATCHALL "\n *[0-9a-f]+:\t(lock |xchg[a-z]* [^\n]*\\()[^\n]*" locked_lines
             "${disassembly}")
set(locked_addresses "")
foreach(l IN LISTS locked_lines)
  string(REGEX MATCH "[0-9a-f]+:" a "${l}")
  string(REGEX REPLACE ":$" "" a "${a}")
  string(REGEX REPLACE "^0+" "" a "${a}")
  list(APPEND locked_addresses "0x${a}")
endforeach()
list(LENGTH locked_addresses n_locked)
if(n_locked EQUAL 0)
  message(FATAL_ERROR "objdump found no locked instruction in ${DRIVER}: the check cannot work")
endif()

# count_path(path ir locked): total Ir and total executions of locked
# instructions in the driver's object, collection on only around the loop.
function(count_path path out_ir out_locked)
  set(file ${WORKDIR}/callgrind.${path})
  execute_process(COMMAND ${VALGRIND} --tool=callgrind --collect-atstart=no --dump-instr=yes
                          --dump-line=no --compress-pos=no --compress-strings=no
                          --callgrind-out-file=${file} ${DRIVER} ${path} ${N}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE o ERROR_VARIABLE e)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "valgrind ${DRIVER} ${path} failed (${rc}):\n${o}\n${e}")
  endif()
  file(STRINGS ${file} lines)
  set(ir "")
  set(locked 0)
  set(object "")
  set(after_call FALSE)
  foreach(line IN LISTS lines)
    if(line MATCHES "^(summary|totals): ([0-9]+)")
      if(ir STREQUAL "")
        set(ir ${CMAKE_MATCH_2})
      endif()
    elseif(line MATCHES "^ob=(.*)$")
      set(object "${CMAKE_MATCH_1}")
    elseif(line MATCHES "^calls=")
      set(after_call TRUE)  # the next cost line is the call's inclusive cost
    elseif(line MATCHES "^(0x[0-9a-f]+) ([0-9]+)$")
      if(after_call)
        set(after_call FALSE)
      elseif(object STREQUAL DRIVER_PATH AND CMAKE_MATCH_1 IN_LIST locked_addresses)
        math(EXPR locked "${locked} + ${CMAKE_MATCH_2}")
      endif()
    endif()
  endforeach()
  set(${out_ir} ${ir} PARENT_SCOPE)
  set(${out_locked} ${locked} PARENT_SCOPE)
endfunction()

# hundredths -> "W.FF"
function(per_call total out)
  math(EXPR hundredths "${total} * 100 / ${N}")
  math(EXPR whole "${hundredths} / 100")
  math(EXPR frac "${hundredths} % 100")
  if(frac LESS 10)
    set(frac "0${frac}")
  endif()
  set(${out} "${whole}.${frac}" PARENT_SCOPE)
endfunction()

get_filename_component(DRIVER_PATH ${DRIVER} REALPATH)
count_path(baseline base base_locked)
set(failed "")
string(CONCAT report "RateLimiter per call (callgrind, N=${N}; instructions: loop+call "
       "overhead subtracted; locked: lock-prefixed instructions executed, ${n_locked} such "
       "addresses in the driver):\n")
# path; instruction limit; locked-instruction limit (hundredths per call).
# RateLimiter (adaptive lease, issue 31) and ShardedRateLimiter look at the
# thread's slot and then the shared word: admit <= 26, deny <= 30 (the
# limits the sharded paths have had since issue 17; RateLimiter takes the
# same inline path). The one-word limiter (detail::OneWordRateLimiter, the
# RateLimiter before issue 31) keeps its limits: deny <= 20, admit <= 21.
# Denials and the disabled limiter execute no locked instruction; an admitted
# one-word call executes exactly one (the fetch_add on the shared word: the
# check would report 0 if it could not see it); a leased admission one per
# lease refill (lease 64: 0.01 per call; RateLimiter's 4096 with this burst:
# 0.0002, shown as 0).
foreach(entry "disabled;3;0;0" "deny;30;0;0" "admit;26;0;1" "oneword_deny;20;0;0"
              "oneword_admit;21;100;100" "sharded_admit;26;0;2" "sharded_deny;30;0;0")
  list(GET entry 0 path)
  list(GET entry 1 limit)
  list(GET entry 2 locked_min)
  list(GET entry 3 locked_max)
  count_path(${path} ir locked)
  math(EXPR ir_net "${ir} - ${base}")
  per_call(${ir_net} ir_text)
  per_call(${locked} locked_text)
  math(EXPR ir_hundredths "${ir_net} * 100 / ${N}")
  math(EXPR locked_hundredths "${locked} * 100 / ${N}")
  string(APPEND report "  ${path}: ${ir_text} instructions (limit ${limit}), "
                       "${locked_text} locked (expected ${locked_min}..${locked_max} hundredths)\n")
  if(ir_hundredths GREATER ${limit}00)
    list(APPEND failed "${path}: over the instruction budget")
  endif()
  if(locked_hundredths LESS locked_min OR locked_hundredths GREATER locked_max)
    list(APPEND failed "${path}: ${locked_text} locked instructions per call")
  endif()
endforeach()
message("${report}")
if(failed)
  string(REPLACE ";" "\n  " failed_text "${failed}")
  message(FATAL_ERROR "callgrind check failed:\n  ${failed_text}")
endif()
