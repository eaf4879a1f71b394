# SPDX-License-Identifier: MIT
# Fails when a page of the HTML reference links to a file of the reference
# that does not exist (a Markdown link to a document that is not a page, a
# page Doxygen did not write): every link between the pages must work in
# the installed HTML. Run by the docs target after Doxygen:
#   cmake -DHTML_DIR=<dir> -P CheckDocLinks.cmake
if(NOT HTML_DIR)
    message(FATAL_ERROR "CheckDocLinks.cmake: HTML_DIR is not set")
endif()
file(GLOB pages "${HTML_DIR}/*.html")
set(broken 0)
foreach(page ${pages})
    file(READ "${page}" text)
    string(REGEX MATCHALL "href=\"[^\"]*\"" links "${text}")
    list(REMOVE_DUPLICATES links)
    foreach(link ${links})
        string(REGEX REPLACE "^href=\"([^\"#]*).*" "\\1" target "${link}")
        # Only links to local files: not another scheme (https:,
        # javascript:, mailto:), not a link within the page (#name).
        if(target STREQUAL "" OR target MATCHES "^[A-Za-z][A-Za-z0-9+.-]*:")
            continue()
        endif()
        if(NOT EXISTS "${HTML_DIR}/${target}")
            get_filename_component(name "${page}" NAME)
            message(SEND_ERROR "${name}: link to ${target}, which the reference does not have")
            math(EXPR broken "${broken} + 1")
        endif()
    endforeach()
endforeach()
if(broken GREATER 0)
    message(FATAL_ERROR "CheckDocLinks.cmake: ${broken} broken links in ${HTML_DIR}")
endif()
list(LENGTH pages n)
message(STATUS "API reference: ${n} pages, every local link resolves")
