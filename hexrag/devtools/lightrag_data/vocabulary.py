"""The words the dataset generator draws from: categories, sources, entity types, themes,
name parts and filler sentences (:mod:`hexrag.devtools.lightrag_data.dataset`).
"""

from __future__ import annotations

# fmt: off
CATEGORIES = ("CRM", "ERP", "HR", "Billing", "Analytics", "Security", "Logistics", "Support")
SOURCES = ("ingestion", "manual", "support-kb", "release-notes")
ENTITY_TYPES = (
    "organization",
    "person",
    "product",
    "feature",
    "technology",
    "component",
    "location",
    "event",
    "concept",
)
_TYPE_WEIGHTS = (14, 14, 16, 16, 10, 12, 6, 5, 7)

THEMES = (
    "data integration",
    "access control",
    "billing workflow",
    "incident response",
    "customer onboarding",
    "usage analytics",
    "supply chain visibility",
    "payroll compliance",
    "audit logging",
    "single sign-on",
    "invoice reconciliation",
    "demand forecasting",
    "ticket routing",
    "role management",
    "data retention",
    "encryption at rest",
    "pipeline orchestration",
    "revenue recognition",
    "shipment tracking",
    "performance reviews",
    "fraud detection",
    "report scheduling",
    "api rate limiting",
    "tenant isolation",
    "disaster recovery",
    "contract renewal",
    "inventory planning",
    "sla monitoring",
    "field mapping",
    "webhook delivery",
    "license management",
    "change management",
    "customer churn",
    "knowledge base search",
    "expense approval",
    "vendor onboarding",
    "schema migration",
    "alert escalation",
    "tax calculation",
    "workforce scheduling",
)
_VERBS = (
    "integrates with",
    "depends on",
    "replaces",
    "reports to",
    "feeds data into",
    "is deployed alongside",
    "authenticates against",
    "was evaluated by",
    "exports records to",
    "is maintained by",
    "synchronises with",
    "extends",
    "monitors",
    "is configured through",
    "competes with",
)
_ADJ = (
    "Atlas", "Nimbus", "Quantum", "Vertex", "Helix", "Aurora", "Cobalt", "Zenith", "Orion",
    "Nova", "Pulse", "Summit", "Harbor", "Beacon", "Cascade", "Ember", "Falcon", "Granite",
    "Horizon", "Ion", "Jade", "Krypton", "Lumen", "Meridian", "Nebula", "Onyx", "Prism",
    "Quartz", "Radiant", "Sable", "Titan", "Umbra", "Vector", "Willow", "Xenon", "Yonder",
    "Zephyr", "Apex", "Boreal", "Cinder", "Delta", "Echo", "Flux", "Glacier", "Halo", "Iris",
    "Juniper", "Kestrel", "Lattice", "Mosaic", "Nordic", "Opal", "Pioneer", "Quill", "Raven",
    "Sierra", "Tundra", "Unity", "Vivid", "Wharf", "Yukon", "Zircon", "Amber", "Basalt",
    "Citadel", "Drift", "Elm", "Fjord", "Grove", "Hearth", "Indigo", "Jasper", "Keel",
    "Lagoon", "Mistral", "Nimble", "Oasis", "Pylon", "Rune", "Solstice", "Tessera",
    "Zürich", "Østfold", "Saõ", "Kyōto",
)
_NOUN = (
    "Ledger", "Gateway", "Engine", "Console", "Vault", "Connector", "Scheduler", "Portal",
    "Hub", "Router", "Planner", "Tracker", "Monitor", "Studio", "Registry", "Broker",
    "Catalog", "Pipeline", "Dashboard", "Agent", "Bridge", "Compass", "Desk", "Forge",
    "Graph", "Index", "Journal", "Kernel", "Lens", "Matrix", "Navigator", "Orchestrator",
    "Pilot", "Queue", "Relay", "Sentinel", "Toolkit", "Uplink", "Validator", "Workbench",
    "Exchange", "Archive", "Beacon", "Cluster", "Depot", "Foundry", "Garden", "Harness",
)
_SUFFIX = (
    "Cloud", "Pro", "Suite", "Lite", "Edge", "Plus", "Enterprise", "Mobile", "API",
    "Express", "Core", "Insights", "Sync", "Flow", "One", "X", "360", "Connect", "Live", "Max",
)
_ORG_SUFFIX = (
    "Systems", "Labs", "Corp", "Group", "Networks", "Analytics", "Partners", "GmbH", "Inc.",
    "Holdings", "Technologies", "& Sons", "Software", "Consulting", "AG", "Ltd",
)
_FIRST = (
    "Maria", "James", "Aisha", "Chen", "Olga", "Diego", "Priya", "Tom", "Fatima", "Lars",
    "Yuki", "Kwame", "Elena", "Omar", "Grace", "Ivan", "Sofia", "Raj", "Nora", "Pedro",
    "Hana", "Felix", "Amara", "Jonas", "Leila", "Mateo", "Ingrid", "Kofi", "Mei", "Ahmed",
    "José", "Zoë", "Łukasz", "Søren", "Anaïs", "Björn", "Chloé", "Dmitri", "Émile", "Noël",
)
_LAST = (
    "Okafor", "Smith", "Nakamura", "Garcia", "Ivanova", "Müller", "Rossi", "Kowalski",
    "Haddad", "Larsen", "Patel", "Nguyen", "Dubois", "O'Brien", "Silva", "Kim", "Andersen",
    "Costa", "Fischer", "Mensah", "Schmidt", "Tanaka", "Moreau", "Novak", "Yilmaz", "Berg",
    "Ramos", "Chowdhury", "Lindqvist", "Petrov", "Ferreira", "Wójcik", "Åberg", "Núñez",
)
_LOCATIONS = (
    "Berlin", "Lagos", "Osaka", "Austin", "Lyon", "Pune", "Oslo", "Lima", "Seoul", "Cork",
    "Porto", "Accra", "Perth", "Kraków", "Malmö", "Québec", "Tromsø", "São Paulo",
)
_EVENTS = ("Summit", "Outage", "Migration", "Launch", "Audit", "Hackathon", "Review", "Rollout")
_CONCEPTS = (
    "Zero Trust", "Event Sourcing", "Data Mesh", "Chargeback", "Least Privilege",
    "Idempotency", "Backpressure", "Eventual Consistency", "Sharding", "Feature Flags",
    "Blue-Green Deployment", "Rate Shaping", "Soft Delete", "Tiered Storage", "Dead Letter",
)
_TECH = (
    "OAuth 2.0", "Kafka", "PostgreSQL", "gRPC", "GraphQL", "Redis", "SAML", "Kubernetes",
    "WebAssembly", "Parquet", "OpenTelemetry", "Terraform", "Elasticsearch", "SCIM", "JWT",
    "Protobuf", "Airflow", "dbt", "Snowflake", "S3",
)
_FILLER = (
    "The rollout was staged over several maintenance windows to limit customer impact.",
    "Administrators can override the default behaviour from the settings page.",
    "Metrics are exported every five minutes and retained for ninety days.",
    "The team documented known limitations in the internal runbook.",
    "Support engineers escalate unresolved cases after two business days.",
    "Configuration changes are versioned and can be rolled back.",
    "The feature is disabled by default for tenants on legacy plans.",
    "Customers reported faster turnaround after the change.",
    "A nightly job reconciles the records and flags mismatches for review.",
    "Access is granted per workspace and audited quarterly.",
    "Latency stayed under the agreed threshold during the load test.",
    "The migration guide lists every deprecated field and its replacement.",
)
_SECTIONS = (
    "Overview", "Installation", "Configuration", "Troubleshooting", "Release Notes",
    "Security Model", "Data Flows", "Administration", "Integrations", "FAQ", "Known Issues",
)
# fmt: on

