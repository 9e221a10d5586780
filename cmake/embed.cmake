# Turns INPUT into a C array SYMBOL (with SYMBOL_len) in OUTPUT.
file(READ "${INPUT}" hex HEX)
string(LENGTH "${hex}" hexlen)
math(EXPR len "${hexlen} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" body "${body}")
file(WRITE "${OUTPUT}" "/* Generated from ${INPUT}; do not edit. */\n#include <stddef.h>\n"
     "extern const unsigned char ${SYMBOL}[];\nextern const size_t ${SYMBOL}_len;\n"
     "const unsigned char ${SYMBOL}[] = {\n${body}0x00};\nconst size_t ${SYMBOL}_len = ${len};\n")
