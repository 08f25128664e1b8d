from django.urls import path

from catalog import views

urlpatterns = [
    path("services", views.ServiceListApi.as_view()),
    path("services/<str:service_id>", views.ServiceDetailApi.as_view()),
]
