"""The client settings Streams knows by name, and which of them hold secrets.

``streams.config.redacted`` shows a setting's value only when its name is in ``KNOWN`` and
not in ``SECRET``: the value of a secret, and of any name Streams does not know (a
misspelt ``sasl.pasword`` holds a password all the same), is hidden. An error may name a
setting in ``KNOWN`` (a name is never a secret), never show a value.

Where the names come from:

- ``LIBRDKAFKA``: every property of librdkafka's CONFIGURATION.md (taken at 2.15; a test
  checks the installed librdkafka knows each one). A newer librdkafka's new properties
  are unknown here, so their values are hidden until they are added.
- ``LIBRDKAFKA_SECRET``: the properties rdkafka_conf.c flags ``_RK_SENSITIVE`` (librdkafka
  redacts them in its own configuration dump: passwords, passphrases, PEM keys and their
  files, OAuth configs and client secrets; the SASL user name and the CA's PEM too) and
  the alias of one.
- ``REGISTRY`` and ``REGISTRY_SECRET``: what confluent-kafka's ``SchemaRegistryClient``
  reads from its config (2.16); its URL may carry user info, which ``redacted`` hides too.
- ``JAVA_SECRET``: secrets of Java clients' properties files, which librdkafka refuses
  (``sasl.jaas.config``) but users bring along.
"""

from __future__ import annotations


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


LIBRDKAFKA = _names(
    """
    acks allow.auto.create.topics api.version.fallback.ms api.version.request
    api.version.request.timeout.ms auto.commit.enable auto.commit.interval.ms
    auto.offset.reset background_event_cb batch.num.messages batch.size bootstrap.servers
    broker.address.family broker.address.ttl broker.version.fallback builtin.features
    check.crcs client.dns.lookup client.id client.rack closesocket_cb compression.codec
    compression.level compression.type connect_cb connections.max.idle.ms
    consume.callback.max.messages consume_cb coordinator.query.interval.ms debug
    default_topic_conf delivery.report.only.error delivery.timeout.ms dr_cb dr_msg_cb
    enable.auto.commit enable.auto.offset.store enable.gapless.guarantee enable.idempotence
    enable.metrics.push enable.partition.eof enable.random.seed
    enable.sasl.oauthbearer.unsecure.jwt enable.ssl.certificate.verification enabled_events
    error_cb fetch.error.backoff.ms fetch.max.bytes fetch.message.max.bytes fetch.min.bytes
    fetch.queue.backoff.ms fetch.wait.max.ms group.id group.instance.id group.protocol
    group.protocol.type group.remote.assignor heartbeat.interval.ms https.ca.location
    https.ca.pem interceptors internal.termination.signal isolation.level linger.ms
    log.connection.close log.queue log.thread.name log_cb log_level max.in.flight
    max.in.flight.requests.per.connection max.partition.fetch.bytes max.poll.interval.ms
    max.poll.records message.copy.max.bytes message.max.bytes message.send.max.retries
    message.timeout.ms metadata.broker.list metadata.max.age.ms
    metadata.recovery.rebootstrap.trigger.ms metadata.recovery.strategy msg_order_cmp
    oauthbearer_token_refresh_cb offset.store.method offset.store.path
    offset.store.sync.interval.ms offset_commit_cb opaque open_cb
    partition.assignment.strategy partitioner partitioner_cb plugin.library.paths
    produce.offset.report queue.buffering.backpressure.threshold queue.buffering.max.kbytes
    queue.buffering.max.messages queue.buffering.max.ms queued.max.messages.kbytes
    queued.min.messages queuing.strategy rebalance_cb receive.message.max.bytes
    reconnect.backoff.jitter.ms reconnect.backoff.max.ms reconnect.backoff.ms
    request.required.acks request.timeout.ms resolve_cb retries retry.backoff.max.ms
    retry.backoff.ms sasl.kerberos.keytab sasl.kerberos.kinit.cmd
    sasl.kerberos.min.time.before.relogin sasl.kerberos.principal
    sasl.kerberos.service.name sasl.mechanism sasl.mechanisms
    sasl.oauthbearer.assertion.algorithm sasl.oauthbearer.assertion.claim.aud
    sasl.oauthbearer.assertion.claim.exp.seconds sasl.oauthbearer.assertion.claim.iss
    sasl.oauthbearer.assertion.claim.jti.include
    sasl.oauthbearer.assertion.claim.nbf.seconds sasl.oauthbearer.assertion.claim.sub
    sasl.oauthbearer.assertion.file sasl.oauthbearer.assertion.jwt.template.file
    sasl.oauthbearer.assertion.private.key.file
    sasl.oauthbearer.assertion.private.key.passphrase
    sasl.oauthbearer.assertion.private.key.pem
    sasl.oauthbearer.client.credentials.client.id
    sasl.oauthbearer.client.credentials.client.secret sasl.oauthbearer.client.id
    sasl.oauthbearer.client.secret sasl.oauthbearer.config sasl.oauthbearer.extensions
    sasl.oauthbearer.grant.type sasl.oauthbearer.metadata.authentication.type
    sasl.oauthbearer.method sasl.oauthbearer.scope sasl.oauthbearer.sub.claim.name
    sasl.oauthbearer.token.endpoint.url sasl.password sasl.username security.protocol
    session.timeout.ms share.acknowledgement.mode socket.blocking.max.ms
    socket.connection.setup.timeout.ms socket.keepalive.enable socket.max.fails
    socket.nagle.disable socket.receive.buffer.bytes socket.send.buffer.bytes
    socket.timeout.ms socket_cb ssl.ca.certificate.stores ssl.ca.location ssl.ca.pem
    ssl.certificate.location ssl.certificate.pem ssl.certificate.verify_cb
    ssl.cipher.suites ssl.crl.location ssl.curves.list
    ssl.endpoint.identification.algorithm ssl.engine.id ssl.engine.location
    ssl.key.location ssl.key.password ssl.key.pem ssl.keystore.location
    ssl.keystore.password ssl.providers ssl.sigalgs.list ssl_ca ssl_certificate
    ssl_engine_callback_data ssl_key statistics.interval.ms stats_cb
    sticky.partitioning.linger.ms throttle_cb topic.blacklist
    topic.metadata.propagation.max.ms topic.metadata.refresh.fast.cnt
    topic.metadata.refresh.fast.interval.ms topic.metadata.refresh.interval.ms
    topic.metadata.refresh.sparse transaction.timeout.ms transactional.id
    """
)

LIBRDKAFKA_SECRET = _names(
    """
    sasl.username sasl.password sasl.oauthbearer.config
    sasl.oauthbearer.client.secret sasl.oauthbearer.client.credentials.client.secret
    sasl.oauthbearer.assertion.private.key.file sasl.oauthbearer.assertion.private.key.pem
    sasl.oauthbearer.assertion.private.key.passphrase
    ssl.key.location ssl.key.password ssl.key.pem ssl_key ssl.keystore.password ssl.ca.pem
    """
)

REGISTRY = _names(
    """
    url basic.auth.user.info bearer.auth.credentials.source bearer.auth.token
    bearer.auth.client.id bearer.auth.client.secret bearer.auth.scope
    bearer.auth.issuer.endpoint.url bearer.auth.issuer.endpoint.query
    bearer.auth.logical.cluster bearer.auth.identity.pool.id
    bearer.auth.custom.provider.function bearer.auth.custom.provider.config
    ssl.ca.location ssl.certificate.location ssl.key.location ssl.key.password
    proxy timeout cache.capacity cache.latest.ttl.sec max.retries retries.wait.ms
    retries.max.wait.ms
    """
)

REGISTRY_SECRET = _names(
    """
    basic.auth.user.info bearer.auth.token bearer.auth.client.secret
    bearer.auth.issuer.endpoint.query bearer.auth.custom.provider.config
    ssl.key.location ssl.key.password
    """
)

JAVA_SECRET = _names(
    """
    sasl.jaas.config ssl.truststore.password ssl.keystore.key
    ssl.keystore.certificate.chain ssl.truststore.certificates
    """
)

SECRET = LIBRDKAFKA_SECRET | REGISTRY_SECRET | JAVA_SECRET
"""Names whose values are never shown."""

KNOWN = LIBRDKAFKA | REGISTRY | SECRET
"""Every name Streams knows: the only ones an error shows, and (less ``SECRET``) the
only ones whose values are shown."""
