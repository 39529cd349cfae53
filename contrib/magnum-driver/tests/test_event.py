"""The event's node groups as newer Magnum stores them.

Magnum's API 1.14 (object version 1.2 of NodeGroup) adds node_labels and node_taints to a
node group. Debian's Magnum here is older, so the node group class below adds the two
fields as Magnum declares them (magnum/objects/nodegroup.py: DictOfStringsField and
ListOfDictsField, both nullable): serialize must send them as they are, for magnum-gitops
to render them.
"""

import testtools

from oslo_versionedobjects import fields

from magnum import objects
from magnum.objects import base
from magnum.objects import fields as m_fields

from magnum_gitops_driver import event as event_mod


class ListOfDictsField(fields.AutoTypedField):
    """Magnum's own ListOfDictsField (magnum/objects/fields.py from API 1.14 on)."""

    AUTO_TYPE = fields.List(fields.Dict(fields.FieldType()))


# Not registered (Magnum's own NodeGroup keeps its name); register_if(False) only makes
# the fields attributes, as registration would.
@base.MagnumObjectRegistry.register_if(False)
class NodeGroup114(objects.NodeGroup):
    """A Magnum node group with the fields of Magnum's API 1.14."""

    fields = dict(objects.NodeGroup.fields,
                  node_labels=fields.DictOfStringsField(nullable=True),
                  node_taints=getattr(m_fields, "ListOfDictsField",
                                      ListOfDictsField)(nullable=True))


class TestNodeGroupFields(testtools.TestCase):

    def test_node_labels_and_taints_are_sent(self):
        ng = NodeGroup114()
        ng.name, ng.role, ng.node_count = "gpu", "worker", 1
        ng.node_labels = {"example.org/tier": "gpu"}
        ng.node_taints = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
        out = event_mod.serialize(ng, event_mod.NODEGROUP_EXCLUDED)
        self.assertEqual({"example.org/tier": "gpu"}, out["node_labels"])
        self.assertEqual([{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
                         out["node_taints"])

    def test_unset_fields_are_left_out(self):
        ng = NodeGroup114()
        ng.name, ng.role, ng.node_count = "gpu", "worker", 1
        out = event_mod.serialize(ng, event_mod.NODEGROUP_EXCLUDED)
        self.assertNotIn("node_labels", out)
        self.assertNotIn("node_taints", out)
