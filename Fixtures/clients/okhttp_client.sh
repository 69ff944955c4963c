#!/bin/sh
# netsim exec client for OkHttp (`--client okhttp`): runs Fixtures/clients/okhttp/*.java, compiled
# with Debian's javac against Debian's libokhttp-java (OkHttp 3.13.1, okio 1.16) into
# .build/clients/okhttp/ when missing or older than its sources. ci/setup compiles it first; a
# compile here happens before hello, so it is never scenario time. Compiled to a temporary folder
# and renamed, so runs starting at once never see half of it. The JVM starts before hello too.
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
classes="$repo/.build/clients/okhttp"
jars=/usr/share/java/okhttp.jar:/usr/share/java/okio.jar
stale=0
[ -f "$classes/OkHttpExecClient.class" ] || stale=1
for source in "$here"/okhttp/*.java; do
    [ "$stale" = 1 ] || [ ! "$source" -nt "$classes/OkHttpExecClient.class" ] || stale=1
done
if [ "$stale" = 1 ]; then
    tmp="$classes.$$"
    mkdir -p "$tmp"
    javac -nowarn -d "$tmp" -cp "$jars" "$here"/okhttp/*.java >&2
    rm -rf "$classes.old.$$"
    [ ! -d "$classes" ] || mv "$classes" "$classes.old.$$"
    mv "$tmp" "$classes"
    rm -rf "$classes.old.$$"
fi
# -XX:TieredStopAtLevel=1 -Xshare:auto: a quicker start; OkHttp's behaviour does not depend on the JIT.
exec java -XX:TieredStopAtLevel=1 -cp "$classes:$jars" OkHttpExecClient "$@"
