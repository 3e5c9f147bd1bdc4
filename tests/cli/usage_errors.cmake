# The CLI contract: --help and --version exit 0 on stdout; an unknown subcommand or a bad flag
# exits 2 with usage on stderr.
function(expect args code out_regex err_regex)
  execute_process(COMMAND ${BIN} ${args} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL ${code})
    message(FATAL_ERROR "modelperfobs ${args}: exit ${rc}, expected ${code}\nstdout: ${out}\nstderr: ${err}")
  endif()
  if(out_regex AND NOT out MATCHES "${out_regex}")
    message(FATAL_ERROR "modelperfobs ${args}: stdout does not match '${out_regex}':\n${out}")
  endif()
  if(err_regex AND NOT err MATCHES "${err_regex}")
    message(FATAL_ERROR "modelperfobs ${args}: stderr does not match '${err_regex}':\n${err}")
  endif()
endfunction()

expect("--help" 0 "simulate" "")
expect("--version" 0 "modelperfobs [0-9]+\\.[0-9]+\\.[0-9]+" "")
expect("simulate;--help" 0 "--listen" "")
expect("" 2 "" "Usage: modelperfobs")
expect("no-such-command" 2 "" "unknown subcommand 'no-such-command'.*Usage")
expect("simulate;--no-such-flag" 2 "" "--no-such-flag.*Usage: .*simulate")
expect("simulate;--listen;nonsense" 2 "" "invalid address 'nonsense'")
# Issue 38: a typo or a flag given a list it does not take says what was meant, not 60 lines of help.
expect("sweep;--concurency;1" 2 "" "did you mean --concurrency\\?\nUsage: modelperfobs sweep .*Run 'modelperfobs sweep --help'")
expect("sweep;--url;http://127.0.0.1:1/v1;--model;m;--concurrency;1,2,4" 2 ""
       "--concurrency: parity runs: requests in flight.*did you mean --concurrencies\\?")
expect("sweep;gate;--claim;x" 2 "" "--artifact is required.*Usage: modelperfobs sweep gate")
expect("report" 2 "" "no input: pass --input FILE")
# A number out of its range says what is wanted (CLI11's own check wrote out its range up to DBL_MAX).
expect("proxy;--backend;http://127.0.0.1:1;--client-idle-timeout;0" 2 "" "--client-idle-timeout: 0 is not above 0\n")
expect("proxy;--backend;http://127.0.0.1:1;--pool-idle;-1" 2 "" "--pool-idle: -1 is not 0 or more\n")
expect("proxy;--backend;http://127.0.0.1:1;--pool-idle;soon" 2 "" "--pool-idle: soon is not a number\n")
expect("simulate;--keep-alive-timeout;-0.5" 2 "" "--keep-alive-timeout: -0.5 is not 0 or more\n")

# bandwidth: refused flags say why (exit 2); a failing import exits 1 with the reason; verify
# accepts what collect wrote and says INVALID (exit 1) for anything else.
set(FIX ${CMAKE_CURRENT_LIST_DIR}/../fixtures/ncu)
set(WINDOW "--device;NVIDIA H100 80GB HBM3 (0);--capture-start;2026-08-27T10:00:00Z;--capture-end;2026-08-27T10:01:00Z")
expect("bandwidth;collect;--nvidia-ncu-csv;${FIX}/SYNTHETIC_fak_nvidia-hbm-ncu_details-longform.csv;${WINDOW};--measured-gb-s;20"
       2 "" "--measured-gb-s cannot be combined with --nvidia-ncu-csv: a host-memory figure must never become an HBM")
expect("bandwidth;collect;--nvidia-ncu-csv;${FIX}/SYNTHETIC_fak_nvidia-hbm-ncu_details-longform.csv;${WINDOW};--latency-ms;5"
       2 "" "--latency-ms is not accepted by `bandwidth collect`")
expect("bandwidth;collect;--nvidia-ncu-csv;${FIX}/SYNTHETIC_fak_nvidia-hbm-ncu_details-longform.csv;${WINDOW};--interval;1s"
       2 "" "--interval is not accepted")
expect("bandwidth;collect;--nvidia-ncu-csv;${FIX}/SYNTHETIC_fak_nvidia-hbm-ncu_details-longform.csv;--device;x;--capture-start;2026-08-27T10:00:00Z"
       2 "" "--capture-start and --capture-end are required")
expect("bandwidth;collect;--nvidia-ncu-csv;${FIX}/SYNTHETIC_fak_nvidia-hbm-ncu_details-longform.csv;${WINDOW};--theoretical-gb-s;0"
       2 "" "--theoretical-gb-s must be a number above 0")
expect("bandwidth;collect;--measured-gb-s;20;--device;x;--capture-start;2026-08-27T10:00:00Z;--capture-end;2026-08-27T10:01:00Z"
       2 "" "--device requires --nvidia-ncu-csv")
expect("bandwidth;collect;--nvidia-ncu-csv;${FIX}/ncu-2020_details-page_kerneltime-col_hotspot1024_v100.csv;${WINDOW}"
       1 "" "none of the required metrics")
expect("bandwidth;collect;--nvidia-ncu-csv;${FIX}/SYNTHETIC_raw-page_same-capture-as-fak-details.csv;${WINDOW};--device-roofline-gb-s;1250;--output;${OUT_DIR}/r.json"
       0 "" "raw layout.*1000.0 GB/s")
expect("bandwidth;verify;${OUT_DIR}/r.json" 0 "^OK .*hbm-profiled-kernel-active-time.*1000.0 GB/s" "")
expect("bandwidth;verify;${FIX}/SYNTHETIC_fak_nvidia-hbm-ncu_details-longform.csv" 1 "^INVALID .*not one JSON document" "")

# A write that fails (a file-size limit here, as a full disk) exits 1 saying why, leaves the
# existing output as it was, and leaves no temporary file behind.
file(WRITE ${OUT_DIR}/kept.json "previous receipt\n")
file(GLOB stale ${OUT_DIR}/kept.json.tmp-*)
if(stale)
  file(REMOVE ${stale})
endif()
execute_process(COMMAND prlimit --fsize=64 -- ${BIN} bandwidth collect --nvidia-ncu-csv
                        ${FIX}/SYNTHETIC_raw-page_same-capture-as-fak-details.csv ${WINDOW} --output ${OUT_DIR}/kept.json
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
file(READ ${OUT_DIR}/kept.json kept)
file(GLOB left ${OUT_DIR}/kept.json.tmp-*)
if(NOT rc EQUAL 1 OR NOT err MATCHES "cannot write .*kept.json: File too large; free some space" OR
   NOT kept STREQUAL "previous receipt\n" OR left)
  message(FATAL_ERROR "a failed receipt write: exit ${rc}, stderr: ${err}\nfile now: ${kept}\ntemporaries left: ${left}")
endif()
expect("bandwidth" 2 "" "subcommand")

# sweep, attribute, cache-state-bench: what a user gets wrong says how to fix it (exit 2); a dead
# server is a runtime error (exit 1).
expect("sweep;--help" 0 "--concurrencies" "")
expect("sweep;--url;http://127.0.0.1:9/v1;--concurrencies;1,2" 2 "" "serving sweep requires an exact --model identity")
expect("sweep;--url;http://127.0.0.1:9/v1;--model;m" 2 "" "give exactly one of --concurrencies, --rates or --replay-speeds")
expect("sweep;--url;http://127.0.0.1:9/v1;--model;m;--concurrencies;1,2.5" 2 "" "concurrency 2.5 is not a whole number")
expect("sweep;--url;http://127.0.0.1:9/v1;--model;m;--rates;2;--arrival;zipf" 2 "" "--arrival is poisson, gamma or constant")
expect("sweep;--url;http://127.0.0.1:9/v1;--model;m;--concurrencies;1;--input-tokens;uniform:9,3" 2 "" "is not a length distribution")
expect("sweep;--url;http://127.0.0.1:9/v1;--model;m;--concurrencies;1;--refine" 2 "" "--refine needs a p99 budget")
expect("sweep;--model;m;--track;ours=http://127.0.0.1:9/v1;--track;bogus=http://127.0.0.1:9/v1" 2 "" "'bogus' is not a track")
expect("sweep;--url;http://127.0.0.1:9/v1;--model;m;--concurrencies;1;--ledger;${OUT_DIR}/dead.ledger.jsonl;--output;${OUT_DIR}/dead.json;--quiet"
       1 "" "cannot reach http://127.0.0.1:9/v1/models")
expect("sweep;gate;--artifact;${CMAKE_CURRENT_LIST_DIR}/usage_errors.cmake" 2 "" "give --claim TEXT or --claim-file FILE")
expect("attribute" 2 "" "give --ledger FILE \\(with its snapshots\\), --probe URL, or --verify FILE")
expect("attribute;--probe;http://127.0.0.1:9/v1;--window;sometimes" 2 "" "use auto, per-request or FROM,TO")
expect("cache-state-bench;--backend;tgi" 2 "" "--backend is in-process or vllm")
expect("cache-state-bench;--transitions;warm_boot" 2 "" "unknown transition 'warm_boot'")
expect("cache-state-bench;--backend;vllm" 2 "" "--backend vllm needs --url")
