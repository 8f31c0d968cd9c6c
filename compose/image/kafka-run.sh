#!/bin/sh
# Entrypoint of the streams-kafka image: one Kafka node in KRaft mode, configured from the
# environment the way the official apache/kafka image is, so a compose file works with both:
#   KAFKA_FOO_BAR=x  ->  foo.bar=x   ("__" -> "_", "___" -> "-")
#   CLUSTER_ID       ->  the cluster id the storage is formatted with
#   KAFKA_HEAP_OPTS, KAFKA_OPTS  ->  JVM options (not broker settings)
# Without any KAFKA_* setting: a single combined node advertising localhost:9092.
set -eu

CONFIG=/tmp/kafka/server.properties
DATA=/var/lib/kafka/data
mkdir -p /tmp/kafka "$DATA"

defaults() {
  cat <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@localhost:9093
listeners=PLAINTEXT://:9092,CONTROLLER://:9093
advertised.listeners=PLAINTEXT://localhost:9092
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
num.partitions=1
PROPS
}

from_env() {
  env | grep '^KAFKA_' | grep -Ev '^KAFKA_(HEAP_OPTS|OPTS|JVM_PERFORMANCE_OPTS|LOG4J_OPTS|HOME)=' \
    | while IFS='=' read -r name value; do
        key=$(printf '%s' "${name#KAFKA_}" | tr 'A-Z' 'a-z' \
              | sed -e 's/___/-/g' -e 's/__/@/g' -e 's/_/./g' -e 's/@/_/g')
        printf '%s=%s\n' "$key" "$value"
      done
}

if env | grep -Eq '^KAFKA_(PROCESS_ROLES|NODE_ID|LISTENERS)='; then
  from_env >"$CONFIG"
else
  { defaults; from_env; } >"$CONFIG"
fi
grep -q '^log.dirs=' "$CONFIG" || echo "log.dirs=$DATA" >>"$CONFIG"

CP='/opt/kafka/libs/*'
LOG="-Dlog4j2.configurationFile=/opt/kafka/config/log4j2.xml"
if [ ! -f "$(grep '^log.dirs=' "$CONFIG" | tail -1 | cut -d= -f2 | cut -d, -f1)/meta.properties" ]; then
  java -cp "$CP" $LOG kafka.tools.StorageTool format --ignore-formatted \
    --cluster-id "${CLUSTER_ID:-5L6g3nShT-eMCtK--X86sw}" --config "$CONFIG"
fi
# shellcheck disable=SC2086 # the options are word lists on purpose
exec java ${KAFKA_HEAP_OPTS:--Xmx1g -Xms256m} -XX:+UseG1GC -XX:MaxGCPauseMillis=20 \
  -Djava.awt.headless=true $LOG ${KAFKA_OPTS:-} -cp "$CP" kafka.Kafka "$CONFIG"
