# Installation layout and the Debian package (cpack -G DEB). docs/INSTALLING.md says how to build and
# use it; tests/package/check_deb.sh builds it, runs lintian and runs the packaged binary.
include(GNUInstallDirs)

# Whoever publishes the package sets a reachable address: -DMPO_PACKAGE_MAINTAINER="Name <mail>".
set(MPO_PACKAGE_MAINTAINER "modelperfobs authors <modelperfobs@users.noreply.github.com>"
    CACHE STRING "Maintainer field of the .deb and its changelog")

# The man page, generated from the binary's own --help (help2man; scripts/man-page).
set(MPO_MAN_PAGE ${CMAKE_BINARY_DIR}/man/modelperfobs.1.gz)
add_custom_command(
  OUTPUT ${MPO_MAN_PAGE}
  COMMAND ${PROJECT_SOURCE_DIR}/scripts/man-page $<TARGET_FILE:modelperfobs> ${MPO_MAN_PAGE}
  DEPENDS modelperfobs ${PROJECT_SOURCE_DIR}/scripts/man-page
  COMMENT "man page from --help"
  VERBATIM)
add_custom_target(man_page ALL DEPENDS ${MPO_MAN_PAGE})

# Debian's changelog, compressed as policy wants it (gzip -9n: no name, no time stamp).
string(TIMESTAMP MPO_PACKAGE_DATE "%a, %d %b %Y %H:%M:%S +0000" UTC)
if(DEFINED ENV{SOURCE_DATE_EPOCH})
  set(MPO_PACKAGE_DATE "Thu, 01 Jan 1970 00:00:00 +0000")
endif()
set(VERSION ${PROJECT_VERSION})
set(MAINTAINER "${MPO_PACKAGE_MAINTAINER}")
set(DATE ${MPO_PACKAGE_DATE})
configure_file(${PROJECT_SOURCE_DIR}/deploy/debian/changelog ${CMAKE_BINARY_DIR}/debian/changelog.Debian @ONLY)
add_custom_command(
  OUTPUT ${CMAKE_BINARY_DIR}/debian/changelog.Debian.gz
  COMMAND gzip -9nf -k ${CMAKE_BINARY_DIR}/debian/changelog.Debian
  DEPENDS ${CMAKE_BINARY_DIR}/debian/changelog.Debian
  VERBATIM)
add_custom_target(debian_changelog ALL DEPENDS ${CMAKE_BINARY_DIR}/debian/changelog.Debian.gz)

set(MPO_DOC_DIR ${CMAKE_INSTALL_DATAROOTDIR}/doc/modelperfobs)
install(TARGETS modelperfobs RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${MPO_MAN_PAGE} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES README.md ${CMAKE_BINARY_DIR}/debian/changelog.Debian.gz deploy/debian/copyright
        DESTINATION ${MPO_DOC_DIR})
install(DIRECTORY docs/ DESTINATION ${MPO_DOC_DIR} FILES_MATCHING PATTERN "*.md")
install(DIRECTORY deploy/grafana deploy/prometheus deploy/kubernetes
        DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/modelperfobs/deploy
        PATTERN "tests" EXCLUDE PATTERN "*.sed" EXCLUDE)
install(FILES deploy/debian/modelperfobs-proxy.service DESTINATION lib/systemd/system)
install(FILES deploy/debian/modelperfobs-proxy.default DESTINATION /etc/default RENAME modelperfobs-proxy)
configure_file(${PROJECT_SOURCE_DIR}/deploy/debian/conffiles ${CMAKE_BINARY_DIR}/debian/conffiles COPYONLY)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME modelperfobs)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_PACKAGE_CONTACT "${MPO_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "request-level evidence from OpenAI-compatible model servers")
set(CPACK_PACKAGE_DESCRIPTION
    "modelperfobs is an observation proxy and toolkit for LLM serving (vLLM, SGLang,
llama.cpp, TGI, hosted providers). The proxy writes one JSON line per request
(time to first token, inter-token latency, tokens, outcome); report, sweep,
attribute, scrape and bandwidth turn ledgers, engine metrics and profiler
captures into evidence: where the time goes, where the server saturates and
where the p99 budget is crossed.")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${CMAKE_BINARY_DIR}/debian/conffiles)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_STRIP_FILES ON)
set(CPACK_SET_DESTDIR OFF)
include(CPack)
